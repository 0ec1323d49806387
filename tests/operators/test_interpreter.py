"""interpreter_venv operators, each checked on a real gold image (break, then repair)."""

from __future__ import annotations

from .conftest import check_operator


def test_pyvenv_cfg_removed(runtime, probed):
    gold, probe = probed("markupsafe==3.0.2")
    result = check_operator(runtime, gold, probe, "pyvenv_cfg_removed")
    assert result["lines"] == ["RUN rm -f /opt/venv/pyvenv.cfg"]
    assert len(result["failing"]) == len(gold.tests)


def test_venv_python_symlink_broken(runtime, probed):
    gold, probe = probed("markupsafe==3.0.2")
    result = check_operator(runtime, gold, probe, "venv_python_symlink_broken")
    assert len(result["failing"]) == len(gold.tests)


def test_console_script_shebang_wrong(runtime, probed):
    gold, probe = probed("python-dotenv==1.2.1")
    result = check_operator(runtime, gold, probe, "console_script_shebang_wrong")
    assert result["target"].path == "/opt/venv/bin/dotenv"
    assert set(result["failing"]) <= set(gold.tests)
