"""The probe credits a test file with what it needs at import, also what a shared helper
imported before it (so a target's touching tests are predicted from the whole import
chain), and a probe recorded by another plugin is made again."""

from __future__ import annotations

from cligym.harness.probe import load_or_probe, load_probe
from cligym.layout import GoldDir
from cligym.models.io import save

APISPEC = "apispec==6.10.1"


def test_a_test_file_is_credited_with_what_its_shared_helper_imported(runtime, gold_envs, tmp_path):
    gold = gold_envs(APISPEC)
    probe = load_or_probe(runtime, gold, tmp_path)
    # tests/utils.py imports openapi_spec_validator; test_core.py imports utils first, the
    # marshmallow test files import it later: Python does not import it again for them
    later = probe.touch["file:tests/test_ext_marshmallow.py"].modules
    assert "openapi_spec_validator" in later and "tests.utils" in later
    assert not any(m.startswith("tests.test_core") for m in later)  # other test modules are not credited
    # test_yaml_utils.py does not use the helper: the validator is not its concern
    assert "openapi_spec_validator" not in probe.touch["file:tests/test_yaml_utils.py"].modules
    broad = probe.touching(list(gold.tests), "modules", "openapi_spec_validator")
    assert len(broad) > 0.9 * len(gold.tests)


def test_a_probe_of_another_plugin_is_stale(runtime, gold_envs, tmp_path):
    gold = gold_envs(APISPEC)
    probe = load_or_probe(runtime, gold, tmp_path)
    assert load_probe(gold, GoldDir(tmp_path).probe) is not None
    save(probe.model_copy(update={"plugin": "0" * 12}), tmp_path / "old.json")
    assert load_probe(gold, tmp_path / "old.json") is None
