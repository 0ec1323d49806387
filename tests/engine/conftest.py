"""Fixtures of the engine tier. The tests drive a real Docker engine: nothing here mocks it.

Gold environments, the markupsafe operator run and its Harbor export are made once per
test run from real PyPI sdists, whether one process runs the tests or several pytest-xdist
workers do (``tests/engine/shared.py``). Gold images stay as a cache; the scratch images
the run left are removed at the end, and every test checks that no cligym-labelled
container outlives it.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from filelock import FileLock

from cligym.config import DEFAULT_BASE_IMAGE
from cligym.layout import GoldDir
from cligym.models.gold import GoldEnv
from cligym.models.io import load, save
from cligym.runtime import Runtime
from tests.engine.shared import once, run_root


@pytest.fixture(scope="session")
def runtime() -> Runtime:
    return Runtime()


@pytest.fixture(scope="session")
def base_image(runtime: Runtime, tmp_path_factory) -> str:
    from cligym.runtime import ensure_base_image

    with FileLock(str(run_root(tmp_path_factory) / "base-image.lock")):  # one worker builds it
        ensure_base_image(runtime)
    return DEFAULT_BASE_IMAGE


@pytest.fixture(scope="session", autouse=True)
def _remove_session_images():
    """Remove, at the end, the scratch images this session made and left (a test that
    failed half-way). Gold images stay: a cache that other runs use, and the next test run
    finds (``cligym.runtime.names``); ``cligym clean --images --cache DAYS`` prunes them."""
    yield
    if not os.environ.get("CLIGYM_KEEP_TEST_IMAGES"):
        Runtime().remove_scratch_images()


@pytest.fixture(autouse=True)
def _no_leftover_containers(request):
    """Every test must leave no cligym-labelled container behind."""
    rt = Runtime()
    before = set(rt.labelled_containers(mine=True))
    yield
    after = set(rt.labelled_containers(mine=True)) - before
    for _ in range(20):  # a removal the engine is still finishing (under load) is not a leak
        if not after:
            break
        time.sleep(0.5)
        after &= set(rt.labelled_containers(mine=True))
    if after:
        rt.remove_labelled_containers(mine=True)
        pytest.fail(f"{len(after)} cligym container(s) survived the test")


@pytest.fixture(scope="session")
def gold_dirs(tmp_path_factory, runtime, base_image):
    """spec -> the folder of a real PyPI project's gold environment, ``gold.json`` and
    ``probe.json`` as ``cligym gold`` writes them, built once per test run (read only)."""
    from cligym.gold import make_gold

    def get(spec: str) -> Path:
        return once(tmp_path_factory, "gold-" + spec.replace("==", "-"),
                    lambda out: make_gold(spec, out, runtime=runtime))

    return get


@pytest.fixture(scope="session")
def gold_envs(gold_dirs, runtime):
    """spec -> the GoldEnv of ``gold_dirs(spec)``."""
    made: dict[str, GoldEnv] = {}

    def get(spec: str) -> GoldEnv:
        if spec not in made:
            made[spec] = load(GoldEnv, GoldDir(gold_dirs(spec)).gold)
        return made[spec]

    return get


@pytest.fixture(scope="session")
def gold_copy(gold_dirs, gold_envs):
    """(spec, folder) -> folder, holding a copy of the gold record and its probe: a run
    made from it reads the probe instead of probing gold again. (The shared markupsafe run
    is made from the record alone, so inversion's own probing stays tested.)"""

    def copy(spec: str, folder: Path) -> Path:
        gold_envs(spec)
        source, target = GoldDir(gold_dirs(spec)), GoldDir(folder)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source.gold, target.gold)
        shutil.copyfile(source.probe, target.probe)
        return folder

    return copy


@pytest.fixture(scope="session")
def markupsafe_run(runtime, gold_envs, tmp_path_factory) -> Path:
    """One real operator run on markupsafe (4 attempts, seed 1: 4 tasks): ROOT/gold (its gold dir)
    and ROOT/run, made once per test run. Shared by the tests that only read a run (its
    checks, export, rollout)."""
    from cligym.invert import invert

    gold = gold_envs("markupsafe==3.0.2")

    def make(root: Path) -> None:
        save(gold, root / "gold" / "gold.json")
        invert(root / "gold", root / "run", attempts=4, seed=1, runtime=runtime)

    return once(tmp_path_factory, "markupsafe-run", make)


@pytest.fixture(scope="session")
def shadow_runs(runtime, gold_envs, gold_copy, tmp_path_factory):
    """spec -> ROOT holding gold/, run/ (up to four attempts of one operator, cwd_shadow_module,
    seed 5, stopping at two tasks: a spare for a first attempt that took a state with nothing
    left to forge) and tasks/ (its Harbor export), made once per test run: the reward attacks' task,
    and single sweepable faults the difficulty measure must rate easy."""
    from cligym.export.stage import export
    from cligym.invert import invert

    def get(spec: str) -> Path:
        gold_envs(spec)  # held by every process that reads the run

        def make(root: Path) -> None:
            gold_copy(spec, root / "gold")
            invert(root / "gold", root / "run", attempts=4, seed=5, operators=["cwd_shadow_module"], max_operators=1,
                   max_tasks=2, runtime=runtime)
            export(root / "run", "harbor", root / "tasks", runtime=runtime)

        return once(tmp_path_factory, "shadow-" + spec.replace("==", "-"), make)

    return get


@pytest.fixture(scope="session")
def markupsafe_harbor(runtime, markupsafe_run, tmp_path_factory) -> Path:
    """The markupsafe run exported as Harbor tasks, once per test run (read only)."""
    from cligym.export.stage import export

    return once(tmp_path_factory, "markupsafe-harbor",
                lambda folder: export(markupsafe_run / "run", "harbor", folder / "tasks", runtime=runtime)) / "tasks"
