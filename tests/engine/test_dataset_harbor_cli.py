"""Harbor's own CLI (``harbor run``, Harbor 0.26.0 in a Python 3.12 venv) on a dataset
``cligym dataset build`` made from a real PyPI project: the oracle scores 1 and nop 0 on
every task, through Harbor's own trial runner and verifier. Containers run on the local
engine through ``tests/harbor_plain_docker.py`` (no network, a pids limit)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import docker
import pytest
import tomli_w

from cligym.layout import DatasetDir

from .servers import empty_engine, registry_server

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-harbor-cli"
HARBOR = "harbor==0.26.0"
ENV_CLASS = "tests.harbor_plain_docker:PlainDockerEnvironment"
LABEL = "cligym.test=harbor-cli"

pytestmark = pytest.mark.slow


def python312() -> str:
    """A Python >= 3.12 (Harbor's requirement): one pyenv installed, or one on PATH."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = sorted(glob.glob(str(pyenv / "3.1[2-9]*" / "bin" / "python3")))
    candidates += [found for name in ("python3.13", "python3.12") if (found := shutil.which(name))]
    for candidate in candidates:
        ok = subprocess.run([candidate, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                            capture_output=True, timeout=60)
        if ok.returncode == 0:
            return candidate
    pytest.fail("Harbor needs Python >= 3.12: none under pyenv or on PATH")


@pytest.fixture(scope="module")
def harbor() -> Path:
    """Harbor's CLI in its own venv (made once, kept beside the project's .venv)."""
    stamp = VENV / f".cligym-installed-{HARBOR}"
    if not stamp.exists():
        subprocess.run([python312(), "-m", "venv", "--clear", str(VENV)], check=True, timeout=300)
        pip = subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q",
                              "--disable-pip-version-check", HARBOR], capture_output=True, text=True, timeout=1200)
        assert pip.returncode == 0, pip.stderr[-2000:]
        stamp.touch()
    return VENV / "bin" / "harbor"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, base_image) -> Path:
    folder = tmp_path_factory.mktemp("harbor-cli")
    projects = folder / "projects.toml"
    projects.write_text('attempts = 3\ntasks = 2\n\n[[project]]\nsource = "python-dotenv==1.2.1"\n')
    out = folder / "out"
    done = subprocess.run([sys.executable, "-m", "cligym", "dataset", "build", str(projects), "-o", str(out),
                           "--seed", "5", "--no-bundle", "-q"], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def harbor_run(harbor: Path, tasks: Path, agent: str, jobs: Path, engine: str | None = None, *,
               options: tuple[str, ...] = (), variables: dict[str, str] | None = None, concurrent: int = 2) -> dict:
    """``harbor run`` over every task (on ``engine`` if given; ``options`` and ``variables``
    added to its command line and environment); returns its job's result.json."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **({"DOCKER_HOST": engine} if engine else {}),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # Harbor's model-price table: the copy it ships
           **(variables or {})}
    done = subprocess.run([str(harbor), "run", "-p", str(tasks), "-a", agent, "--env", ENV_CLASS, "-o", str(jobs),
                           "-n", str(concurrent), *options], capture_output=True, text=True, timeout=2400, env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    (result,) = jobs.glob("*/result.json")
    return json.loads(result.read_text())


def _leftovers() -> list[str]:
    found = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL}"], capture_output=True, text=True)
    return found.stdout.split()


@pytest.mark.parametrize("agent, expected", [("oracle", 1.0), ("nop", 0.0)])
def test_harbor_cli_scores_every_task(harbor, dataset, tmp_path, agent, expected):
    tasks = DatasetDir(dataset).harbor.path
    names = sorted(p.parent.name for p in tasks.glob("*/task.toml"))
    assert len(names) >= 2
    try:
        result = harbor_run(harbor, tasks, agent, tmp_path / "jobs")
        stats = result["stats"]
        assert stats["n_errored_trials"] == 0 and stats["n_completed_trials"] == len(names), json.dumps(stats)
        (evals,) = stats["evals"].values()
        rewards = evals["reward_stats"]["reward"]
        assert set(rewards) == {str(expected)} and len(rewards[str(expected)]) == len(names), rewards
    finally:
        assert _leftovers() == []


def variants(task: Path, scripts: dict[str, str], out: Path) -> Path:
    """One copy of ``task`` per script, whose solution slot runs it (with the attacks'
    payload beside it): a folder of tasks ``harbor run`` takes as they are."""
    data = ROOT / "tests" / "data"
    for name, script in scripts.items():
        copy = out / f"{task.name[:40]}-{name.replace('_', '-')}"
        shutil.copytree(task, copy)
        (copy / "solution" / "solve.sh").write_text("#!/bin/bash\n" + script)
        (copy / "solution" / "solve.sh").chmod(0o755)
        for payload in (data / "attacks").glob("*.py"):  # what the attack scripts run
            shutil.copy(payload, copy / "solution" / payload.name)
        config = tomllib.loads((copy / "task.toml").read_text())
        config["task"]["name"] = f"cligym/{copy.name}"  # one name per trial
        (copy / "task.toml").write_text(tomli_w.dumps(config))
    return out


def rewards(result: dict) -> dict[str, list[str]]:
    stats = result["stats"]
    assert stats["n_errored_trials"] == 0, json.dumps(stats)
    (evals,) = stats["evals"].values()
    return evals["reward_stats"]["reward"]


@pytest.fixture(scope="module")
def submodule_task(tmp_path_factory, base_image) -> Path:
    """One exported markupsafe task whose breakage is a submodule of the package removed,
    made with cligym's CLI as a user would."""
    return cli_task(tmp_path_factory.mktemp("submodule-task"), "markupsafe==3.0.2", "package_submodule_removed")


def cli_task(folder: Path, project: str, operator: str) -> Path:
    """gold, invert (one operator) and export with cligym's CLI; the first exported task."""
    steps = [["gold", project, "-o", str(folder / "gold"), "-q"],
             ["invert", str(folder / "gold"), "-o", str(folder / "run"), "-n", "3", "--seed", "3",
              "--operators", operator, "--max-operators", "1", "-q"],
             ["export", str(folder / "run"), "-o", str(folder / "tasks")]]
    for step in steps:
        done = subprocess.run([sys.executable, "-m", "cligym", *step], capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, (step, done.stderr[-2000:])
    tasks = sorted(p.parent for p in (folder / "tasks").glob("*/task.toml"))
    assert tasks, f"{operator} made no task of {project}"
    return tasks[0]


def scripted(task: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(attacks, honest repairs) as solution scripts: the test data's and the probe
    batteries', the shared-container ones included; a repair runs after the oracle's."""
    from cligym.validate.probes import battery

    data = ROOT / "tests" / "data"
    oracle = (task / "solution" / "solve.sh").read_text()
    attacks = {p.stem: p.read_text() for p in sorted([*(data / "attacks").glob("*.sh"),
                                                      *(data / "harbor_only").glob("*.sh")])}
    repairs = {p.stem: oracle + "\n" + p.read_text() for p in sorted((data / "repairs").glob("*.sh"))}
    for probe in battery():
        (attacks if probe.kind == "cheat" else repairs)[f"probe-{probe.name}"] = (
            probe.script if probe.kind == "cheat" else oracle + "\n" + probe.script)
    repairs["oracle"] = oracle
    return attacks, repairs


def test_no_attack_scores_and_every_honest_repair_does_in_harbors_cli(harbor, submodule_task, tmp_path):
    """Every scripted attack run as the agent's work in Harbor's own CLI scores 0, those on
    Harbor's shared container included (a bash of the agent's on PATH with a watcher, PID 1
    traced, the verifier's output redirected through a link, /tests pre-created: the task's
    compose file mounts its guard read-only and puts its launcher first on PATH); the oracle
    and every honest repair on top of it score 1 (reinstalling with python -m pip, python3 -m
    pip and pip alike); nop scores 0. The probe batteries of ``validate --probes`` too."""
    attacks, repairs = scripted(submodule_task)
    try:
        found = per_trial(harbor, variants(submodule_task, attacks, tmp_path / "attacks"), "oracle", tmp_path / "a")
        assert set(found.values()) == {0.0} and len(found) == len(attacks), found
        found = per_trial(harbor, variants(submodule_task, repairs, tmp_path / "repairs"), "oracle", tmp_path / "r")
        assert set(found.values()) == {1.0} and len(found) == len(repairs), found
        nop = per_trial(harbor, variants(submodule_task, {"nop": ""}, tmp_path / "nop"), "nop", tmp_path / "n")
        assert list(nop.values()) == [0.0], nop
    finally:
        assert _leftovers() == []


def per_trial(harbor: Path, tasks: Path, agent: str, jobs: Path) -> dict[str, float | None]:
    """``harbor run``, then each trial's reward by its task's name."""
    rewards(harbor_run(harbor, tasks, agent, jobs))  # no trial errored
    return {t["task_name"].rsplit("/", 1)[-1]: t["reward"] for t in _trials(jobs)}


def test_harbor_cli_runs_a_registry_dataset_on_an_empty_engine(harbor, base_image, tmp_path_factory, tmp_path):
    """A dataset built with --registry, run by Harbor's own CLI on a second engine that holds
    nothing: every task builds FROM its gold image pulled by digest from the registry, and
    scores oracle 1 and nop 0."""
    with registry_server(tmp_path_factory.mktemp("registry")) as registry, \
            empty_engine(tmp_path_factory.mktemp("engine")) as engine:
        projects = tmp_path / "projects.toml"
        projects.write_text('attempts = 3\ntasks = 2\n\n[[project]]\nsource = "python-dotenv==1.2.1"\n')
        out = tmp_path / "out"
        done = subprocess.run([sys.executable, "-m", "cligym", "dataset", "build", str(projects), "-o", str(out),
                               "--seed", "5", "--no-bundle", "-q", "--registry", registry],
                              capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stderr[-2000:]
        tasks = DatasetDir(out).harbor.path
        names = sorted(p.parent.name for p in tasks.glob("*/task.toml"))
        assert names and all(f"FROM {registry}/cligym/gold-" in (tasks / n / "environment" / "Dockerfile").read_text()
                             for n in names)
        assert docker.DockerClient(base_url=engine).images.list() == []
        for agent, expected in (("oracle", "1.0"), ("nop", "0.0")):
            found = rewards(harbor_run(harbor, tasks, agent, tmp_path / agent, engine=engine))
            assert set(found) == {expected} and len(found[expected]) == len(names), found


@pytest.fixture(scope="module")
def unseen_task(tmp_path_factory, base_image) -> Path:
    """One exported task whose breakage the verifier's fingerprint does not list (a time zone
    removed from the system's database)."""
    return cli_task(tmp_path_factory.mktemp("tz-task"), "python-dateutil==2.9.0.post0", "zoneinfo_removed")


def test_the_shared_container_attacks_score_zero_where_the_fingerprint_is_blind(harbor, unseen_task, tmp_path):
    """On a task whose breakage no listing sees, the attacks on Harbor's shared container and
    the planted pytest plugins score 0 in Harbor's CLI, and the oracle 1."""
    attacks, repairs = scripted(unseen_task)
    chosen = {n: attacks[n] for n in ("harness_bash", "pid1_ptrace", "stdout_symlink", "entry_point_plugin",
                                      "tilde_entry_point", "thread_writer", "probe-entry_point_plugin",
                                      "probe-conftest_plugin", "probe-stdout_symlink")}
    try:
        found = per_trial(harbor, variants(unseen_task, {**chosen, "oracle": repairs["oracle"]}, tmp_path / "t"),
                          "oracle", tmp_path / "jobs")
        assert len(found) == len(chosen) + 1, found
        assert [r for n, r in found.items() if n.endswith("-oracle")] == [1.0], found
        assert {r for n, r in found.items() if not n.endswith("-oracle")} == {0.0}, found
    finally:
        assert _leftovers() == []


def _trials(jobs: Path) -> list[dict]:
    """Each trial's task name and reward, from the job's trial folders."""
    found = []
    for result in jobs.glob("*/*/result.json"):
        data = json.loads(result.read_text())
        reward = ((data.get("verifier_result") or {}).get("rewards") or {}).get("reward")
        found.append({"task_name": data.get("task_name", result.parent.name), "reward": reward})
    return found
