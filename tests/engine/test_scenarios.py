"""Incident scenarios on a real gold environment (python-dotenv from PyPI): chains and
blockers survive the validity rules, decoys do not, and difficulty rates a chained,
blocked incident above a single fault the task-blind sweeper repairs."""

from __future__ import annotations

import random
import uuid

import pytest

from cligym.harness.images import build_broken
from cligym.harness.probe import load_or_probe
from cligym.harness.testrun import run_tests
from cligym.invert import invert
from cligym.invert.minimal import leave_one_out
from cligym.invert.operators import GoldFiles
from cligym.invert.scenarios import REGISTRY, PlannedChange, Site
from cligym.layout import RunDir
from cligym.models.io import load
from cligym.models.task import Task
from cligym.models.timing import PhaseSeconds

PROJECT = "python-dotenv==1.2.1"


@pytest.fixture(scope="module")
def dotenv(gold_envs, gold_copy, runtime, tmp_path_factory):
    """(gold, gold dir with its probe saved, probe)."""
    folder = gold_copy(PROJECT, tmp_path_factory.mktemp("dotenv-gold"))
    gold = gold_envs(PROJECT)
    return gold, folder, load_or_probe(runtime, gold, folder)


def only_task(run_dir) -> Task:
    tasks = [load(Task, p) for p in RunDir(run_dir).task_records()]
    assert len(tasks) == 1, [c.name for c in RunDir(run_dir).candidates.glob("*")]
    return tasks[0]


def test_leave_one_repair_out_keeps_a_chain_and_drops_a_decoy(dotenv, runtime):
    """A vendored copy over a deleted submodule: left out of ΔD, either change still fails
    the tests (leave-one-fault-out would call both decoys), yet the repair needs both
    steps; a harmless extra change's step is not needed."""
    gold, _, probe = dotenv
    with runtime.session(gold.image) as session:
        site = Site(probe, list(gold.tests), GoldFiles.of_session(session))
        plan = REGISTRY["vendored_copy_in_workdir"].plan(site, random.Random(0))
    assert plan is not None, "no narrow submodule with a wheel in python-dotenv's environment"
    decoy = PlannedChange(name="decoy", category="system_files", dockerfile=["RUN touch /opt/harmless"],
                          repair=["rm -f /opt/harmless"], places=["/opt/harmless"], symptom="-", hint="-", offline="-")
    changes = [*plan.changes, decoy]
    tag = f"cligym/test-chain:{uuid.uuid4().hex[:10]}"
    without_copy = f"cligym/test-chain:{uuid.uuid4().hex[:10]}"
    try:
        build_broken(runtime, gold, [line for c in changes for line in c.dockerfile], tag)
        failing = sorted(run_tests(runtime, tag, gold.workdir, gold.test_command, plan.touching).not_passed())
        assert failing, "the chain broke nothing"
        # leave-one-fault-out: without the copy the deleted submodule still fails them all
        build_broken(runtime, gold, changes[1].dockerfile, without_copy)
        assert set(failing) <= run_tests(runtime, without_copy, gold.workdir, gold.test_command, failing).not_passed()
        still = leave_one_out(runtime, gold, tag, [c.step for c in changes], failing, list(gold.tests), PhaseSeconds())
    finally:
        runtime.remove_image(tag)
        runtime.remove_image(without_copy)
    assert still[0] and still[1], "both links of the chain are needed"
    assert still[2] == [], "the decoy's repair is not needed"


def test_a_blocked_incident_is_hard(dotenv, runtime, tmp_path):
    """A real run: the constraint scenario (a blocker pip.conf pin over a deleted module)
    verifies with k = 2, its blocker checked, and the sweeper fails on it."""
    _, folder, _ = dotenv
    invert(folder, tmp_path / "pin", attempts=1, seed=0, scenarios=["constraint_pins_missing_release"],
           runtime=runtime)
    pinned = only_task(tmp_path / "pin")
    blocker = next(a for a in pinned.applied if a.role == "blocker")
    assert blocker.blocks is True and all(a.necessary or a.blocks for a in pinned.applied)
    assert pinned.difficulty.k == 2 and not pinned.difficulty.sweeper_solves
    assert pinned.difficulty.label in ("medium", "hard") and pinned.scenario == "constraint_pins_missing_release"
    assert len(pinned.repair_steps) == 2 and pinned.offline_fair


def test_a_single_sweepable_fault_is_easy(shadow_runs):
    """A real run: a stray module in the working directory shadowing one the project imports
    (one operator; the reward attacks' run) is repaired by the sweeper and rated easy."""
    tasks = [load(Task, p) for p in RunDir(shadow_runs("markupsafe==3.0.2") / "run").task_records()]
    assert tasks and all(t.operators == ["cwd_shadow_module"] for t in tasks)
    for single in tasks:
        assert single.difficulty.k == 1 and single.difficulty.sweeper_solves, single.instance_id
        assert single.difficulty.label == "easy", single.instance_id
