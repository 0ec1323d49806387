"""certificates operators, applied to the envtouch gold image and repaired."""

from __future__ import annotations

from .conftest import check_operator
from .fixtures_envtouch import envtouch  # noqa: F401  (the session fixture)

SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def test_ca_bundle_garbage(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "ca_bundle_garbage")
    assert result["target"].path.endswith("certifi/cacert.pem")  # the narrowest bundle
    assert result["failing"] == ["tests/test_certs.py::test_certifi_bundle_loads"]


def test_ca_bundle_garbage_system_bundle(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(
        runtime, gold, probe, "ca_bundle_garbage", target_filter=lambda t: t.path == SYSTEM_BUNDLE
    )
    assert "tests/test_certs.py::test_system_trust_store_has_roots" in result["failing"]


def test_ca_bundle_emptied(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "ca_bundle_emptied")
    assert result["failing"] == ["tests/test_certs.py::test_certifi_bundle_loads"]


def test_ca_bundle_emptied_system_bundle_regenerated(runtime, envtouch):  # noqa: F811
    """The system bundle comes back from update-ca-certificates, offline."""
    gold, probe = envtouch
    result = check_operator(
        runtime, gold, probe, "ca_bundle_emptied", target_filter=lambda t: t.path == SYSTEM_BUNDLE
    )
    assert result["target"].data.get("regenerate") is True
    assert "tests/test_certs.py::test_system_bundle_lists_well_known_roots" in result["failing"]
