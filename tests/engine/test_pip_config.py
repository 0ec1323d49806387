"""pip's configuration is part of the repaired state, shown on a real task of a
pip-configuration scenario (``build_stage_pip_target`` on markupsafe: a ``target`` setting in
``/etc/pip.conf``'s ``[install]`` over code missing from an installed distribution).

- The verifier: the oracle scores 1; a reinstall with pip's configuration ignored
  (``PIP_CONFIG_FILE=/dev/null``) that leaves the blocker in ``/etc/pip.conf`` scores 0
  ("pip's configuration differs from gold"); an honest repair that deletes the setting with
  sed (the file's bytes then differ from gold's: whitespace, a comment, an empty section)
  scores 1; deleting ``/etc/pip.conf`` outright (gold's machine installs from its
  wheelhouse through it) scores 0.
- The difficulty measure: the sweeper, which reinstalls with pip's configuration ignored,
  does not solve the task (its tests pass after it, but the blocker stays), while the
  oracle's repair does, by the same measure.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cligym.runtime import ImageKind

from cligym.export.stage import export
from cligym.harness.bundle import script
from cligym.harness.images import repair_and_test_in_session
from cligym.harness.trial import build_task_image
from cligym.invert import invert
from cligym.layout import ExportDir, RunDir, TaskDir
from cligym.models.io import load
from cligym.models.task import Task
from cligym.verify.difficulty import repair_solves, sweeper_solves
from tests.engine.shared import once
from tests.verifier_runs import solve_then_judge

# an invert of its own: minutes (test_scenarios keeps a blocked incident in the default run)
pytestmark = pytest.mark.slow

PROJECT = "markupsafe==3.0.2"
SCENARIO = "build_stage_pip_target"
#: Every wheel gold was built from, reinstalled with the venv's pip.
REINSTALL = "/opt/venv/bin/python -m pip install --force-reinstall --no-deps /opt/wheelhouse/*.whl"


@pytest.fixture(scope="module")
def pip_target_task(runtime, gold_envs, gold_copy, tmp_path_factory):
    """(gold, the task record, its Harbor export, its built image): a real
    ``build_stage_pip_target`` run on markupsafe (up to three attempts, one task)."""
    gold = gold_envs(PROJECT)

    def make(root: Path) -> None:
        gold_copy(PROJECT, root / "gold")
        invert(root / "gold", root / "run", attempts=3, seed=0, scenarios=[SCENARIO], max_tasks=1, runtime=runtime)
        export(root / "run", "harbor", root / "tasks", runtime=runtime)

    root = once(tmp_path_factory, "pip-target-markupsafe", make)
    task_dir = next(iter(ExportDir(root / "tasks").task_dirs()))
    task = load(Task, RunDir(root / "run").task_record(task_dir.name))
    assert task.scenario == SCENARIO and any(a.role == "blocker" for a in task.applied), task.applied
    tag = build_task_image(runtime, task_dir, ImageKind.VALIDATE)
    yield gold, task, task_dir, tag
    runtime.remove_image(tag)


def with_solution(task_dir: TaskDir, dest: Path, solve: str) -> TaskDir:
    """A copy of the task whose solution slot runs ``solve``."""
    shutil.copytree(task_dir.path, dest)
    copy = TaskDir(dest)
    copy.solve_sh.write_text("#!/bin/sh\nset -e\n" + solve + "\n")
    copy.solve_sh.chmod(0o755)
    return copy


#: What runs in the solution slot (None: the oracle's own), the reward and its reason.
REPAIRS = {
    "oracle": (None, 1.0, "reward 1: all "),
    "reinstall_with_the_configuration_ignored": (
        f"PIP_CONFIG_FILE=/dev/null {REINSTALL.replace('install ', 'install --no-index ', 1)}", 0.0,
        "reward 0: pip's configuration differs from gold: +/etc/pip.conf [install] target = "),
    "blocker_deleted_with_sed": (
        f"sed -i -e '/^target *=/d' -e 's/ *= */=/' -e 's/^no-index=true$/no-index=true   /' /etc/pip.conf\n"
        f"grep -q '^# build stage' /etc/pip.conf\n{REINSTALL}", 1.0, "reward 1: all "),
    "pip_conf_deleted": ("@ORACLE@\nrm -f /etc/pip.conf", 0.0,
                         "reward 0: pip's configuration differs from gold: -/etc/pip.conf [global] "),
}


@pytest.mark.parametrize("repair", sorted(REPAIRS))
def test_the_verdict_covers_pips_configuration(repair, pip_target_task, runtime, tmp_path):
    _, _, task_dir, tag = pip_target_task
    solve, reward, reason = REPAIRS[repair]
    task = task_dir
    if solve is not None:
        oracle = task_dir.solve_sh.read_text()
        task = with_solution(task_dir, tmp_path / "task", solve.replace("@ORACLE@", oracle))
    result = solve_then_judge(runtime, tag, task, "cligym")
    assert result.reward == reward and reason in result.detail, result


def test_the_sweeper_does_not_solve_it_while_the_oracles_repair_does(pip_target_task, runtime):
    gold, task, _, tag = pip_target_task
    assert not sweeper_solves(runtime, gold, tag, task.FAIL_TO_PASS)
    assert repair_solves(runtime, gold, tag, task.FAIL_TO_PASS, task.solution)
    # what the sweeper left: the F2P tests pass (so, before pip's configuration counted, it
    # solved the task), and the blocker is still in /etc/pip.conf
    with runtime.session(tag) as session:
        _, run = repair_and_test_in_session(session, gold, script("sweeper.sh"), task.FAIL_TO_PASS)
        assert set(task.FAIL_TO_PASS) <= run.passed(), run.output_tail[-500:]
        assert b"target" in (session.get_file("/etc/pip.conf") or b"")
