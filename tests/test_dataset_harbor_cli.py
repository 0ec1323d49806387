"""Harbor's own CLI (``harbor run``, Harbor 0.25.0 in a Python 3.12 venv) on a dataset
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
from pathlib import Path

import pytest

from cligym.layout import DatasetDir

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-harbor-cli"
HARBOR = "harbor==0.25.0"
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
    stamp = VENV / ".cligym-installed"
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


def harbor_run(harbor: Path, tasks: Path, agent: str, jobs: Path) -> dict:
    """``harbor run`` over every task; returns its job's result.json."""
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # Harbor's model-price table: the copy it ships
    done = subprocess.run([str(harbor), "run", "-p", str(tasks), "-a", agent, "--env", ENV_CLASS, "-o", str(jobs),
                           "-n", "2"], capture_output=True, text=True, timeout=2400, env=env)
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
