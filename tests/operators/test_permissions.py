"""filesystem_permissions operators, each checked on a real gold image (break, then repair)."""

from __future__ import annotations

from .conftest import check_operator


def test_console_script_not_executable(runtime, probed):
    gold, probe = probed("python-dotenv==1.2.1")
    result = check_operator(runtime, gold, probe, "console_script_not_executable")
    assert result["target"].path == "/opt/venv/bin/dotenv"
    assert len(result["failing"]) < len(gold.tests)


def test_interpreter_not_executable(runtime, probed):
    gold, probe = probed("markupsafe==3.0.2")
    result = check_operator(runtime, gold, probe, "interpreter_not_executable")
    assert result["target"].path == probe.python["realpath"]
    assert len(result["failing"]) == len(gold.tests)
