"""The Debian world's changes on a real package's gold, on a real engine: a planned change
built into gold + ΔD fails tests it predicted, and its repair — offline, in the broken
container — makes them pass again. (A plan whose target the tests survive is a miss the
pipeline retries; each planner gets three draws to break something.)"""

from __future__ import annotations

import random
from pathlib import Path

from cligym.harness.images import broken_tag, build_broken, delta_digest, repair_and_test
from cligym.harness.testrun import run_tests
from cligym.invert.debian_changes import CHANGES, DebianSite
from cligym.layout import GoldDir
from cligym.models.debian_probe import DebianProbe
from cligym.models.gold import GoldEnv
from cligym.models.io import load


def _broke_and_repaired(runtime, gold: GoldEnv, plan) -> bool:
    """Whether the plan's state fails some of its predicted tests (False: a miss); asserts
    that its repair then makes every one of them pass."""
    change = plan.changes[0]
    tag = broken_tag(gold, delta_digest(gold, change.dockerfile))
    try:
        build_broken(runtime, gold, change.dockerfile, tag)
        broken = run_tests(runtime, tag, gold.workdir, gold.test_command, plan.touching, timeout=600)
        if not broken.failing(plan.touching):
            return False
        code, output, fixed = repair_and_test(runtime, tag, gold, "\n".join(change.repair), plan.touching, timeout=600)
        assert code == 0, f"{change.name}: the repair exited {code}: {output[-300:]}"
        assert not fixed.failing(plan.touching), f"{change.name}: still failing after {change.repair}"
        return True
    finally:
        runtime.remove_image(tag)


def test_each_change_breaks_tests_and_its_offline_repair_restores_them(perl_gold_dir: Path, perl_gold: GoldEnv,
                                                                        runtime) -> None:
    probe = load(DebianProbe, GoldDir(perl_gold_dir).probe_debian)
    site = DebianSite(probe, perl_gold.tests)
    broke = []
    for name, planner in CHANGES.items():
        plans = [p for seed in range(3) if (p := planner(site, random.Random(seed))) is not None]
        if any(_broke_and_repaired(runtime, perl_gold, plan) for plan in plans):
            broke.append(name)
    # a package's tests load its own files and libraries: at least a removed or emptied file
    # and one more kind break them
    assert len(broke) >= 2 and {"packaged_file_removed", "packaged_file_emptied"} & set(broke), broke
