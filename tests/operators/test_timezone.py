"""time_zone_data operators, applied to the envtouch gold image and repaired."""

from __future__ import annotations

from .conftest import check_operator
from .fixtures_envtouch import envtouch  # noqa: F401  (the session fixture)

ZONE_TESTS = "tests/test_zones.py::"


def test_zoneinfo_corrupted(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "zoneinfo_corrupted")
    assert result["target"].path.startswith("/usr/share/zoneinfo/")
    assert set(result["failing"]) >= set(result["target"].touching)
    assert all(t.startswith(ZONE_TESTS) for t in result["failing"])


def test_zoneinfo_removed(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "zoneinfo_removed")
    assert result["lines"] == [f"RUN rm -f {result['target'].path}"]
    assert set(result["failing"]) >= set(result["target"].touching)


def test_localtime_relinked(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "localtime_relinked")
    assert result["target"].data["original"] == probe.files["/etc/localtime"].link
    assert f"{ZONE_TESTS}test_local_zone_agrees_with_the_c_library" in result["failing"]
    assert all(t.startswith(ZONE_TESTS) for t in result["failing"])
