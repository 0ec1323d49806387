"""The Debian world's changes on a real package's gold, on a real engine: a planned change
built into gold + ΔD fails tests it predicted and shows in the state listing the verifier
compares (``cligym.debian.state``); its repair — offline, in the broken container — makes
the tests pass again and the listing gold's, line for line (apt's reinstall leaves nothing
else behind). A plan whose target the tests survive is a miss the pipeline retries: each
planner gets three draws to break something."""

from __future__ import annotations

import random
from pathlib import Path

from cligym.debian.state import system_state
from cligym.harness.bundle import script
from cligym.harness.images import broken_tag, build_broken, delta_digest, repair_and_test, repair_and_test_in_session
from cligym.harness.debian_reference import full_spec, system_listing
from cligym.harness.testrun import run_tests
from cligym.invert.debian_changes import CHANGES, SCENARIOS
from cligym.invert.debian_search import tool_packages
from cligym.invert.debian_site import DebianSite
from cligym.layout import GoldDir
from cligym.models.debian_probe import DebianProbe
from cligym.models.gold import GoldEnv
from cligym.models.io import load


def _broke_and_repaired(runtime, gold: GoldEnv, plan, listed) -> bool:
    """Whether the plan's state fails some of its predicted tests (False: a miss); asserts
    that the state's listing differs from gold's, and that after its repair every predicted
    test passes and the listing is gold's again."""
    change = plan.changes[0]
    tag = broken_tag(gold, delta_digest(gold, change.dockerfile))
    try:
        build_broken(runtime, gold, change.dockerfile, tag)
        broken = run_tests(runtime, tag, gold.workdir, gold.test_command, plan.touching, timeout=600)
        if not broken.failing(plan.touching):
            return False
        with runtime.session(tag) as session:
            assert listed(session) != listed(None), f"{change.name}: the state listing does not see {change.places}"
            fixed, run = repair_and_test_in_session(session, gold, "\n".join(change.repair), plan.touching, 600)
            assert fixed.exit_code == 0, f"{change.name}: the repair exited {fixed.exit_code}: {fixed.output[-300:]}"
            assert not run.failing(plan.touching), f"{change.name}: still failing after {change.repair}"
            after = listed(session)
        gold_lines = listed(None)
        assert after == gold_lines, (change.name, sorted(set(after) ^ set(gold_lines))[:6])
        if change.category in ("package_files", "dynamic_linking"):
            code, output, swept = repair_and_test(runtime, tag, gold, script("debian-sweeper.sh"), plan.touching, 600)
            assert not swept.failing(plan.touching), f"{change.name}: the sweeper missed it: {output[-400:]}"
        return True
    finally:
        runtime.remove_image(tag)


def test_each_change_breaks_tests_and_state_and_its_offline_repair_restores_both(
        perl_gold_dir: Path, perl_gold: GoldEnv, runtime) -> None:
    probe = load(DebianProbe, GoldDir(perl_gold_dir).probe_debian)
    state = system_state(probe)
    spec = full_spec(state)
    def lines(session):  # the listing, then how the loader resolves the tests' objects
        listing, _, resolved = system_listing(session, spec, state.objects)
        return [*listing, *resolved]

    with runtime.session(perl_gold.image) as session:
        reference = lines(session)
        spared = tool_packages(session)  # as a run's degrader spares them

    def listed(session):
        return reference if session is None else lines(session)

    site = DebianSite(probe, perl_gold.tests, spared=spared)
    broke = []
    for name, planner in CHANGES.items():
        plans = [p for seed in range(3) if (p := planner(site, random.Random(seed))) is not None]
        if any(_broke_and_repaired(runtime, perl_gold, plan, listed) for plan in plans):
            broke.append(name)
    # a package's tests load its own files and libraries: at least a removed or emptied file
    # and one more kind break them
    assert len(broke) >= 2 and {"packaged_file_removed", "packaged_file_emptied"} & set(broke), broke
    for name, planner in SCENARIOS.items():  # a blocker: the naive reinstall alone repairs nothing
        plans = [p for seed in range(5) if (p := planner(site, random.Random(seed))) is not None]
        assert any(_blocked_then_repaired(runtime, perl_gold, plan, listed) for plan in plans), name


def _blocked_then_repaired(runtime, gold: GoldEnv, plan, listed) -> bool:
    """Whether the scenario's state fails its tests and its blocker turns the naive repair
    away (False: a miss, as the pipeline's blocker check would find it); asserts that the
    whole repair (blocker first) makes the tests pass and the listing gold's."""
    lines = [line for change in plan.changes for line in change.dockerfile]
    tag = broken_tag(gold, delta_digest(gold, lines))
    try:
        build_broken(runtime, gold, lines, tag)
        broken = run_tests(runtime, tag, gold.workdir, gold.test_command, plan.touching, timeout=600)
        if not broken.failing(plan.touching):
            return False
        naive = "\n".join(line for step in plan.naive for line in step.lines)
        _, _, after_naive = repair_and_test(runtime, tag, gold, naive, plan.touching, 600)
        if not after_naive.failing(plan.touching):
            return False  # the blocker did not block this target: a miss the pipeline's blocker check refuses
        whole = "\n".join(line for i in plan.repair_order for line in plan.changes[i].repair)
        with runtime.session(tag) as session:
            fixed, run = repair_and_test_in_session(session, gold, whole, plan.touching, 600)
            assert fixed.exit_code == 0 and not run.failing(plan.touching), (plan.scenario, fixed.output[-300:])
            assert listed(session) == listed(None), plan.scenario
        return True
    finally:
        runtime.remove_image(tag)
