"""The reward cannot be had without a repair, and every honest repair earns it.

Real tasks of two projects (python-dotenv and markupsafe, default operators) are exported as
Harbor tasks and run the way ``cligym validate`` runs them: the solution slot (solve.sh
executed as Harbor's oracle agent runs it), then the task's verifier.

- Each attack in ``tests/data/attacks/`` (the seven ways found to score 1 without
  repairing anything) scores 1 against the naive verifier (pytest's exit status in the
  image, reward.txt), launched as Harbor launches it, so the attack really works; and 0
  against the exported one, with the reason the verifier gives.
- Each repair in ``tests/data/repairs/`` (what a careful engineer might do on top of the
  oracle's repair: reinstall every wheel with ``python``, ``python3`` or ``pip``, recreate the
  venv, ``ldconfig``, restore from a copy) scores 1.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cligym.export.stage import export
from cligym.harness.verifier import TEST_OUTPUT, build_task_image, run_oracle, run_verifier
from cligym.invert import invert
from cligym.layout import ExportDir, RunDir, TaskDir
from cligym.models.io import load, save
from cligym.models.task import TaskInstance
from tests.test_verifier_cheats import naive_verifier

DATA = Path(__file__).parent / "data"
ATTACKS = sorted(p.stem for p in (DATA / "attacks").glob("*.sh"))
REPAIRS = sorted(p.stem for p in (DATA / "repairs").glob("*.sh"))
PROJECTS = ["python-dotenv==1.0.1", "markupsafe==3.0.2"]
#: the verifier's reason for each attack's 0 (an attack that changes nothing the tests load
#: gets the verdict of the unrepaired breakage: it only shows that the verifier itself ran)
REASONS = {
    "reward_json": "",
    "project_code": "the environment differs from gold: -file ",
    "stdlib_probe_module": "the environment differs from gold: +file ",
    "pycache_symlink": "the environment differs from gold: +link ",
    "hidden_pth": "the environment differs from gold: +file ",
    "bash_wrapper": "",
    "pid_hopper": "",
}
KEEPALIVE = ("sh", "-c", "sleep infinity")  # PID 1 as Harbor starts it


@pytest.fixture(scope="module", params=PROJECTS, ids=lambda p: p.split("==")[0])
def task(request, runtime, gold_envs, tmp_path_factory):
    """(an exported Harbor task of the project, its TaskInstance, its built image)."""
    gold = gold_envs(request.param)
    root = tmp_path_factory.mktemp("attacks")
    save(gold, root / "gold" / "gold.json")
    summary = invert(root / "gold", root / "run", attempts=2, seed=5, operators=["cwd_shadow_module"],
                     max_operators=1, runtime=runtime)
    assert summary.verified >= 1, summary
    export(root / "run", "harbor", root / "tasks", runtime=runtime)
    task_dir = ExportDir(root / "tasks").task_dirs()[0]
    instance = load(TaskInstance, RunDir(root / "run").instance(task_dir.name))
    tag = build_task_image(runtime, task_dir, "attacks")
    yield task_dir, instance, tag
    runtime.remove_image(tag)


def variant(task_dir: TaskDir, dest: Path, solve: str, naive: TaskInstance | None = None) -> TaskDir:
    """A copy of the task whose solution slot runs ``solve`` (with the attacks' payload
    beside it), and whose tests/ is the naive verifier when ``naive`` is given."""
    shutil.copytree(task_dir.path, dest)
    copy = TaskDir(dest)
    copy.solve_sh.write_text("#!/bin/bash\n" + solve)
    copy.solve_sh.chmod(0o755)
    shutil.copy(DATA / "attacks" / "forge.py", copy.solution / "forge.py")
    if naive is not None:
        shutil.rmtree(copy.tests)
        copy.tests.mkdir()
        copy.test_sh.write_text(naive_verifier(naive))
        copy.test_sh.chmod(0o755)
    return copy


def reward(runtime, tag: str, task: TaskDir) -> tuple[float | None, str]:
    """The solution slot, then the verifier; the reward is read again a second later (a
    process still writing it would show) and must not have changed."""
    with runtime.session(tag, keepalive=KEEPALIVE) as session:
        run_oracle(session, task)
        first = run_verifier(session, task)
        session.exec(["sleep", "1"])
        again = run_verifier.__globals__["read_reward"](session)
        output = (session.get_file(TEST_OUTPUT) or b"").decode("utf-8", "replace")
    assert again.reward == first.reward, (first, again, output[-1500:])
    return first.reward, output


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_fools_a_naive_verifier_but_scores_zero(attack, task, runtime, tmp_path):
    task_dir, instance, tag = task
    script = (DATA / "attacks" / f"{attack}.sh").read_text()
    value, output = reward(runtime, tag, variant(task_dir, tmp_path / "naive", script, naive=instance))
    assert value == 1.0, f"{attack} does not even fool the naive verifier: {output[-1500:]}"
    value, output = reward(runtime, tag, variant(task_dir, tmp_path / "bundled", script))
    assert value == 0.0, f"{attack} fooled the exported verifier: {output[-2000:]}"
    verdict = output.rsplit("cligym verifier: ", 1)[-1]
    assert verdict.startswith("reward 0: ") and REASONS[attack] in verdict, output[-1500:]


@pytest.mark.parametrize("repair", REPAIRS)
def test_an_honest_repair_on_top_of_the_oracle_scores_one(repair, task, runtime, tmp_path):
    task_dir, _, tag = task
    solve = task_dir.solve_sh.read_text() + "\n" + (DATA / "repairs" / f"{repair}.sh").read_text()
    value, output = reward(runtime, tag, variant(task_dir, tmp_path / "honest", solve))
    assert value == 1.0, f"{repair} was refused: {output[-2000:]}"
