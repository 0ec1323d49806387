"""system_files operators, applied to real gold images and repaired."""

from __future__ import annotations

from .conftest import check_operator
from .fixtures_envtouch import envtouch  # noqa: F401  (the session fixture)


def test_stdlib_module_corrupted(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "stdlib_module_corrupted")
    target = result["target"]
    assert target.path.startswith(probe.python["stdlib"]) and target.path.endswith(".py")
    assert len(target.touching) < len(gold.tests)
    assert len(result["failing"]) < len(gold.tests)


def test_stdlib_module_corrupted_markupsafe(runtime, probed):
    gold, probe = probed("markupsafe==3.0.2")
    result = check_operator(runtime, gold, probe, "stdlib_module_corrupted")
    assert result["target"].data["module"].startswith("html")
    assert len(result["failing"]) < len(gold.tests)


def test_mime_types_corrupted(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "mime_types_corrupted")
    assert result["target"].data["how"] == "mappings"
    assert "tests/test_mime.py::test_common_types" in result["failing"]


def test_mime_types_corrupted_h11(runtime, probed):
    """h11's stdlib server reads the table only to type a file with no extension: the
    shifted mappings change nothing, the undecodable line breaks the request."""
    gold, probe = probed("h11==0.16.0")
    result = check_operator(runtime, gold, probe, "mime_types_corrupted")
    assert result["target"].data["how"] == "encoding"
    assert result["failing"] == ["h11/tests/test_against_stdlib_http.py::test_h11_as_client"]


def test_os_release_corrupted(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "os_release_corrupted")
    assert result["target"].path == probe.realpath("/etc/os-release")
    assert result["failing"] == ["tests/test_system.py::test_user_agent_names_the_os"]
