"""The reward cannot be had without a repair, and every honest repair earns it.

Real tasks of two projects (python-dotenv and markupsafe, a default operator) are exported
as Harbor tasks; the solution slot (solve.sh executed as Harbor's oracle agent runs it)
holds the attack or the repair, then the task's verifier runs: the way ``cligym validate``
runs it (default set), and the way Harbor's CLI runs it, in the agent's own container with
its processes still running (slow set; ``tests/verifier_runs.py``).

- Each attack in ``tests/data/attacks/`` (the seven ways found to score 1 without
  repairing anything, and two of those a red-team review found next) scores 1 against the
  naive verifier (pytest's exit status in the image, reward.txt), launched as Harbor launches
  it, so the attack really works; and 0 against the exported one, with the verifier's own
  verdict line.
- Each repair in ``tests/data/repairs/`` (what a careful engineer might do on top of the
  oracle's repair: reinstall every wheel with ``python``, ``python3`` or ``pip``, recreate the
  venv with links or copies, ``ldconfig``, restore from a copy, precompile everything, leave
  an interrupted pip's ``~`` stash behind) scores 1.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cligym.runtime import ImageKind

from cligym.harness.trial import build_task_image
from cligym.layout import ExportDir, RunDir, TaskDir
from cligym.models.io import load
from cligym.models.task import Task
from tests.engine.test_verifier_cheats import naive_verifier
from tests.verifier_runs import naive_tests, solve_then_judge

DATA = Path(__file__).parents[1] / "data"
ATTACKS = sorted(p.stem for p in (DATA / "attacks").glob("*.sh"))
#: the honest repairs the probes of ``validate --probes`` also make (a fresh venv, a
#: reinstall from the wheelhouse) run with -m slow; the others by default
LIKE_PROBES = {"venv_recreate", "wheelhouse_pip", "wheelhouse_python", "wheelhouse_python_version"}
REPAIRS = [pytest.param(p.stem, marks=[pytest.mark.slow] if p.stem in LIKE_PROBES else [])
           for p in sorted((DATA / "repairs").glob("*.sh"))]
#: markupsafe (its C extension is part of the environment) in the default run; python-dotenv
#: (pure Python) too with -m slow
PROJECTS = [pytest.param("python-dotenv==1.0.1", marks=pytest.mark.slow), "markupsafe==3.0.2"]
#: the verifier's reason for each attack's 0 (an attack that changes nothing the tests load
#: gets the verdict of the unrepaired breakage: it only shows that the verifier itself ran)
REASONS = {
    "reward_json": "",
    "project_code": "the environment differs from gold: -file ",
    "stdlib_probe_module": "the environment differs from gold: +file ",
    "pycache_symlink": "the environment differs from gold: +dir ",
    "pycache_forged": "",  # the forged file is not read: the verdict is the unrepaired breakage's
    "hidden_pth": "the environment differs from gold: +file ",
    "tilde_pth": "the environment differs from gold: +file ",
    "bash_wrapper": "",
    "pid_hopper": "",
    "pyvenv_home": "the environment differs from gold: -venv ",
    "workdir_package": "",  # the breakage of these tasks is a new module in the same folder, found first
    "thread_writer": "",  # swept: the verdict is the unrepaired breakage's
    "entry_point_plugin": "/0plugin-1.0.dist-info/",  # a distribution's metadata, found before the breakage
    "tilde_entry_point": "/src/cligym_",  # the "~" folder is removed; the plugin's module below src/ is refused
    # Harbor's shared container (the naive verifier runs without the task's guard there)
    "harness_bash": "the uploaded tests' files are not the task's",  # the agent's /tests/bin/bash
    "pid1_ptrace": "",  # the trace is refused: the verdict is the unrepaired breakage's
}


@pytest.fixture(scope="module", params=PROJECTS, ids=["python-dotenv", "markupsafe"])
def task(request, runtime, shadow_runs):
    """(an exported Harbor task of the project, its Task, its built image)."""
    # four attempts of cwd_shadow_module, exported: markupsafe's first is a task whose tests
    # still partly pass, but under load a screen can time out and the attempt take another state
    root = shadow_runs(request.param)
    assert RunDir(root / "run").task_records(), "the attempt made no task"
    # a task whose breakage leaves pytest running (some tests still pass): one that stops
    # pytest's own start-up gives no attack anything to forge, even against a naive verifier
    found = [(d, load(Task, RunDir(root / "run").task_record(d.name)))
             for d in ExportDir(root / "tasks").task_dirs()]
    running = [(d, t) for d, t in found if t.PASS_TO_PASS]
    assert running, [t.dockerfile for _, t in found]
    task_dir, instance = running[0]
    tag = build_task_image(runtime, task_dir, ImageKind.VALIDATE)
    yield task_dir, instance, tag
    runtime.remove_image(tag)


def variant(task_dir: TaskDir, dest: Path, solve: str, naive: Task | None = None) -> TaskDir:
    """A copy of the task whose solution slot runs ``solve`` (with the attacks' payload
    beside it), and whose tests/ is the naive verifier when ``naive`` is given."""
    shutil.copytree(task_dir.path, dest)
    copy = TaskDir(dest)
    copy.solve_sh.write_text("#!/bin/bash\n" + solve)
    copy.solve_sh.chmod(0o755)
    for payload in (DATA / "attacks").glob("*.py"):  # what the attack scripts run
        shutil.copy(payload, copy.solution / payload.name)
    if naive is not None:  # without the guard too: a naive task has none
        naive_tests(copy, naive_verifier(naive))
    return copy


#: The runner an attack's naive baseline runs in, where Harbor's way is not the one it beats:
#: Harbor (0.25 and 0.26) removes stale reward files itself before it runs tests/, so a
#: reward file planted once only fools a naive verifier run by a harness that does not.
NAIVE_RUNNER = {"reward_json": "cligym"}


def attack_scores_zero(attack: str, task, runtime, tmp_path, runner: str, reason: str | None = None) -> None:
    """The attack scores 1 against the naive verifier and 0 against the exported one, whose
    verdict says ``reason`` (default: ``REASONS[attack]``)."""
    task_dir, instance, tag = task
    script = (DATA / "attacks" / f"{attack}.sh").read_text()
    # the naive reward is read once, a second after its verifier (``steady=False``): a tracer
    # that goes on rewriting it (pid1_ptrace) keeps it 1, and that is the attack's doing
    naive = solve_then_judge(runtime, tag, variant(task_dir, tmp_path / "naive", script, naive=instance),
                             NAIVE_RUNNER.get(attack, "harbor"), steady=False)
    assert naive.reward == 1.0, f"{attack} does not even fool the naive verifier: {naive}"
    result = solve_then_judge(runtime, tag, variant(task_dir, tmp_path / "bundled", script), runner)
    assert result.reward == 0.0, f"{attack} fooled the exported verifier run the {runner} way: {result}"
    reason = REASONS[attack] if reason is None else reason
    assert result.detail.startswith("cligym verifier: reward 0: ") and reason in result.detail, result


def honest_repair_scores_one(repair: str, task, runtime, tmp_path, runner: str) -> None:
    task_dir, _, tag = task
    solve = task_dir.solve_sh.read_text() + "\n" + (DATA / "repairs" / f"{repair}.sh").read_text()
    result = solve_then_judge(runtime, tag, variant(task_dir, tmp_path / "honest", solve), runner)
    assert result.reward == 1.0, f"{repair} was refused when run the {runner} way: {result}"


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_fools_a_naive_verifier_but_scores_zero(attack, task, runtime, tmp_path):
    attack_scores_zero(attack, task, runtime, tmp_path, "cligym")


@pytest.mark.parametrize("repair", REPAIRS)
def test_an_honest_repair_on_top_of_the_oracle_scores_one(repair, task, runtime, tmp_path):
    honest_repair_scores_one(repair, task, runtime, tmp_path, "cligym")


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_scores_zero_in_the_agents_own_container_as_harbor_runs_it(attack, task, runtime, tmp_path):
    """Harbor's way: the agent's processes still running, its bash on the image's PATH (the
    task's [environment] env puts tests/bin first), its PID 1 a shell."""
    attack_scores_zero(attack, task, runtime, tmp_path, "harbor")


@pytest.mark.slow
@pytest.mark.parametrize("repair", REPAIRS)
def test_an_honest_repair_scores_one_as_harbor_runs_it(repair, task, runtime, tmp_path):
    honest_repair_scores_one(repair, task, runtime, tmp_path, "harbor")
