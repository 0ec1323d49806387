import ssl

import envtouch


def test_default_context_verifies_peers():
    context = envtouch.trust_store()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname


def test_system_trust_store_has_roots():
    stats = envtouch.trust_store().cert_store_stats()
    assert stats["x509_ca"] > 50


def test_system_bundle_lists_well_known_roots():
    cafile = ssl.get_default_verify_paths().cafile
    with open(cafile, encoding="ascii") as handle:
        assert handle.read().count("-----BEGIN CERTIFICATE-----") > 50
    assert "ISRG Root X1" in envtouch.bundle_subjects(cafile)


def test_certifi_bundle_loads():
    names = envtouch.bundle_subjects(envtouch.certifi_bundle())
    assert len(names) > 50
    assert "ISRG Root X1" in names
