"""Probe a gold environment once: what do its tests touch?

The probe runs the gold tests in a throw-away container with a recording pytest plugin
(``probe_plugin.py``) and lists the image's filesystem. The result is saved beside
gold.json as probe.json; operators choose their targets from it.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from pathlib import Path

from cligym.errors import CligymError
from cligym.harness.listing import take_listing
from cligym.harness.testrun import shell_command
from cligym.layout import GoldDir
from cligym.models.gold import GoldEnv
from cligym.models.io import load, save
from cligym.models.probe import Probe
from cligym.runtime import Runtime

PLUGIN_DIR = "/tmp/cligym_probe"
PROBE_OUT = "/tmp/cligym-probe.json"


@functools.cache
def _plugin() -> bytes:
    return (resources.files("cligym.harness") / "probe_plugin.py").read_bytes()


@functools.cache
def plugin_digest() -> str:
    """Names the probe plugin's version: a probe another plugin recorded is stale."""
    return hashlib.sha256(_plugin()).hexdigest()[:12]


def run_probe(runtime: Runtime, gold: GoldEnv, timeout: float = 1800) -> Probe:
    plugin = _plugin()
    argv = shell_command(gold.workdir, f"{gold.test_command} -p cligym_probe_plugin") + list(gold.tests)
    result = runtime.run(
        gold.image,
        argv,
        timeout=timeout,
        env={"PYTHONPATH": PLUGIN_DIR, "CLIGYM_PROBE_OUT": PROBE_OUT},
        files={f"{PLUGIN_DIR}/cligym_probe_plugin.py": plugin},
        fetch=[PROBE_OUT],
    )
    raw = result.files.get(PROBE_OUT)
    if not raw:
        raise CligymError(f"the probe of {gold.image} wrote no record: {result.output[-300:]}")
    probe = Probe.model_validate_json(
        raw.replace(b'"touch"', b'"gold_image_id": "%s", "tests": [], "touch"' % gold.image_id.encode(), 1)
    )
    probe.tests = list(gold.tests)
    probe.workdir = gold.workdir
    probe.plugin = plugin_digest()
    probe.env.pop("PYTHONPATH", None)
    probe.env.pop("CLIGYM_PROBE_OUT", None)
    probe.files = take_listing(runtime, gold.image)
    return probe


def load_probe(gold: GoldEnv, *paths: Path) -> Probe | None:
    """The first probe saved at one of ``paths`` that belongs to this gold record (same
    image, same tests, same probe plugin), or None."""
    for path in paths:
        if not path.is_file():
            continue
        probe = load(Probe, path)
        if probe.gold_image_id == gold.image_id and probe.tests == gold.tests and probe.plugin == plugin_digest():
            probe.workdir = gold.workdir  # records older than the field
            return probe
    return None


def load_or_probe(runtime: Runtime, gold: GoldEnv, directory: Path) -> Probe:
    """The probe saved in ``directory``, made now (and saved there) if missing or stale."""
    path = GoldDir(directory).probe
    probe = load_probe(gold, path)
    if probe is None:
        probe = run_probe(runtime, gold)
        save(probe, path)
    return probe
