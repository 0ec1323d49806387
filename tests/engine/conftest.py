"""Fixtures of the engine tier. The tests drive a real Docker engine: nothing here mocks it.

Gold environments are built once per session from real PyPI sdists. Images the session
creates (other than the shared base image) are removed at the end, and every test checks
that no cligym-labelled container outlives it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cligym.config import DEFAULT_BASE_IMAGE
from cligym.runtime import Runtime


@pytest.fixture(scope="session")
def runtime() -> Runtime:
    return Runtime()


@pytest.fixture(scope="session")
def base_image(runtime: Runtime) -> str:
    from cligym.runtime import ensure_base_image

    ensure_base_image(runtime)
    return DEFAULT_BASE_IMAGE


@pytest.fixture(scope="session", autouse=True)
def _remove_session_images(request):
    """Remove, at the end, the labelled images this session created (the base stays)."""
    if os.environ.get("CLIGYM_KEEP_TEST_IMAGES"):
        yield
        return
    rt = Runtime()
    yield
    # the tags this process made (their build steps go with them), never by id: a gold image
    # it built stays while another process holds it, and what others build FROM stays
    rt.remove_made(keep=frozenset({DEFAULT_BASE_IMAGE}))


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
def gold_envs(tmp_path_factory, runtime, base_image):
    """Build (once per session) gold environments of real PyPI projects, on demand."""
    from cligym.gold import make_gold

    made: dict[str, object] = {}

    def get(spec: str):
        if spec not in made:
            out: Path = tmp_path_factory.mktemp("gold-" + spec.split("==")[0])
            made[spec] = make_gold(spec, out, runtime=runtime)
        return made[spec]

    return get


@pytest.fixture(scope="session")
def markupsafe_run(runtime, gold_envs, tmp_path_factory) -> Path:
    """One real operator run on markupsafe (6 attempts, seed 1): ROOT/gold (its gold dir)
    and ROOT/run. Shared by the tests that only read a run (its checks, export, rollout),
    so the default suite makes it once."""
    from cligym.invert import invert
    from cligym.models.io import save

    root = tmp_path_factory.mktemp("markupsafe-run")
    save(gold_envs("markupsafe==3.0.2"), root / "gold" / "gold.json")
    invert(root / "gold", root / "run", attempts=6, seed=1, runtime=runtime)
    return root
