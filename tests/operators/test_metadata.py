"""package_metadata operators, each applied to a real gold image, broken and repaired."""

from tests.operators.conftest import check_operator


def test_dist_info_removed(runtime, probed):
    gold, probe = probed("apispec==6.10.1")
    result = check_operator(runtime, gold, probe, "dist_info_removed")
    assert result["target"].path.endswith(".dist-info")


def test_entry_points_corrupted(runtime, probed):
    gold, probe = probed("python-dotenv==1.2.1")
    result = check_operator(runtime, gold, probe, "entry_points_corrupted")
    assert set(result["failing"]) == set(gold.tests)  # pytest itself reads every entry point


def test_console_script_broken(runtime, probed):
    gold, probe = probed("python-dotenv==1.2.1")
    result = check_operator(runtime, gold, probe, "console_script_broken")
    assert result["target"].path == "/opt/venv/bin/dotenv"
    assert set(result["failing"]) <= set(gold.tests) and len(result["failing"]) < len(gold.tests)
