"""``cligym invert`` on a real Debian gold (a small perl-team package), end to end on a real
engine: the incident scenario whose blocker is a disabled apt source makes a verified task
that carries the system state its verifier compares; exported as a Harbor task, its oracle
scores 1 and nothing done 0; and two repairs that get every test passing without putting
the system back score 1 against a naive verifier (the runner's exit status in the image)
but 0 against the exported one:

- the task-blind sweeper's way round the blocker (``dpkg -i`` of the repository's file
  while apt's source stays off): the tests pass, the machine still cannot reinstall;
- every test in the runner's list turned into ``true``: the runner exits 0, nothing is repaired.

And the reward attacks on the harness itself (a planted reward file, a process that keeps
writing one, the image's bash or PID 1 made the agent's) score 1 against that naive
verifier and 0 against the exported one, as on a Python task.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cligym.export.stage import export
from cligym.harness.bundle import script
from cligym.harness.trial import build_task_image
from cligym.invert import invert
from cligym.layout import ExportDir, RunDir, TaskDir
from cligym.models.io import load
from cligym.models.task import Task
from cligym.runtime import ImageKind
from cligym.validate.stage import validate_task
from tests.engine.test_reward_attacks import attack_scores_zero
from tests.engine.test_verifier_cheats import naive_verifier
from tests.verifier_runs import naive_tests, solve_then_judge

#: the reward attacks that go for the harness, not a Python environment (the others plant
#: what Python imports): each must score 0 on a Debian task too
HARNESS_ATTACKS = ["reward_json", "bash_wrapper", "pid_hopper", "harness_bash", "thread_writer", "pid1_ptrace"]
#: where a Debian task's verdict names another cause than a Python task's: the agent's bash
#: in /usr/local/bin is a program the tests run, found first on PATH, refused before the guard is asked
REASONS = {"harness_bash": "the system differs from gold: -absent /usr/local/bin/bash"}

#: every autopkgtest test of the runner's list made a command that succeeds
EDIT_TESTS = (r"""awk -F'\t' 'BEGIN { OFS = "\t" } /^#/ { print; next } """
              r"""{ print $1, $2, "none", "-", "command", "true" }' /opt/cligym/debian/tests.tsv > /tmp/t """
              "&& cat /tmp/t > /opt/cligym/debian/tests.tsv")


@pytest.fixture(scope="module")
def debian_task(perl_gold_dir: Path, runtime, tmp_path_factory):
    """(the exported task's folder, its Task, its built image)."""
    root = tmp_path_factory.mktemp("debian-invert")
    summary = invert(perl_gold_dir, root / "run", attempts=2, seed=3, scenarios=["upgrade_disabled_source"],
                     max_tasks=1, runtime=runtime)
    records = RunDir(root / "run").task_records()
    assert records, f"no verified task: {summary.discarded}"
    export(root / "run", "harbor", root / "tasks", runtime=runtime)
    export(root / "run", "tb", root / "tb", runtime=runtime)
    (task_dir,) = ExportDir(root / "tasks").task_dirs()
    tag = build_task_image(runtime, task_dir, ImageKind.ROLLOUT)  # validate_task builds and removes its own
    yield task_dir, load(Task, records[0]), tag
    runtime.remove_image(tag)


def test_a_debian_task_is_verified_exported_and_judged(debian_task, runtime) -> None:
    task_dir, task, _ = debian_task
    assert task.state is not None and any(line.startswith("T /etc/apt") for line in task.state.spec)
    assert task.scenario == "upgrade_disabled_source" and task.difficulty and task.difficulty.k == 2
    assert not task.difficulty.sweeper_solves  # its way round leaves apt's source off
    assert task.project in task_dir.instruction.read_text()
    result = validate_task(runtime, task_dir)
    assert result.ok, result
    (tb_dir,) = ExportDir(task_dir.path.parents[1] / "tb").task_dirs()  # Terminal-Bench reads the -rA lines
    tb = validate_task(runtime, tb_dir)
    assert tb.ok, tb


def _variant(task_dir: TaskDir, dest: Path, solve: str, naive: Task | None = None) -> TaskDir:
    shutil.copytree(task_dir.path, dest)
    copy = TaskDir(dest)
    copy.solve_sh.write_text("#!/bin/sh\n" + solve + "\n")
    copy.solve_sh.chmod(0o755)
    if naive is not None:
        naive_tests(copy, naive_verifier(naive))
    return copy


@pytest.mark.parametrize("cheat", ["sweeper_way_round", "edited_tests"])
def test_a_repair_that_leaves_the_system_unlike_gold_scores_zero(cheat, debian_task, runtime, tmp_path) -> None:
    task_dir, task, tag = debian_task
    solve = script("debian-sweeper.sh") if cheat == "sweeper_way_round" else EDIT_TESTS
    naive = solve_then_judge(runtime, tag, _variant(task_dir, tmp_path / "naive", solve, naive=task), "cligym")
    assert naive.reward == 1.0, f"{cheat} does not even fool a naive verifier: {naive}"
    result = solve_then_judge(runtime, tag, _variant(task_dir, tmp_path / "bundled", solve), "cligym")
    assert result.reward == 0.0, f"{cheat} fooled the exported verifier: {result}"
    assert result.detail.startswith("cligym verifier: reward 0: "), result


@pytest.mark.slow  # the same harness code as a Python task's, whose attacks run by default
@pytest.mark.parametrize("attack", HARNESS_ATTACKS)
def test_the_harness_attacks_score_zero_on_a_debian_task(attack, debian_task, runtime, tmp_path) -> None:
    attack_scores_zero(attack, debian_task, runtime, tmp_path, "cligym", REASONS.get(attack))
