"""import_system operators, each checked on a real gold image (break, then repair)."""

from __future__ import annotations

from .conftest import check_operator


def test_cwd_shadow_module(runtime, probed):
    gold, probe = probed("h11==0.16.0")
    result = check_operator(runtime, gold, probe, "cwd_shadow_module")
    assert result["target"].path.startswith("/testbed/")


def test_pth_shadow_path(runtime, probed):
    gold, probe = probed("python-dotenv==1.2.1")
    result = check_operator(runtime, gold, probe, "pth_shadow_path")
    assert result["target"].path.endswith(".pth")


def test_import_blocker(runtime, probed):
    gold, probe = probed("markupsafe==3.0.2")
    check_operator(runtime, gold, probe, "import_blocker")


def test_init_py_removed(runtime, probed):
    gold, probe = probed("apispec==6.10.1")
    result = check_operator(runtime, gold, probe, "init_py_removed")
    assert result["target"].path.endswith("/__init__.py")
