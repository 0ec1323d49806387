"""dependency_versions operators, each applied to a real gold image, broken and repaired."""

from tests.operators.conftest import check_operator


def test_dependency_api_removed(runtime, probed):
    gold, probe = probed("environs==15.2.0")
    result = check_operator(runtime, gold, probe, "dependency_api_removed")
    target = result["target"]
    assert target.path.startswith("/opt/venv/") and "/environs/" not in target.path
    assert "Version: " in result["lines"][0]


def test_dependency_uninstalled(runtime, probed):
    gold, probe = probed("python-dotenv==1.2.1")
    result = check_operator(runtime, gold, probe, "dependency_uninstalled")
    assert result["target"].name in ("sh", "click")


def test_dependency_version_mismatch(runtime, probed):
    gold, probe = probed("apispec==6.10.1")
    result = check_operator(runtime, gold, probe, "dependency_version_mismatch")
    assert result["target"].path.endswith("/METADATA") and result["target"].name == "marshmallow"
