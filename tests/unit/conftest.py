"""The unit tier: pure logic. No test here may reach a Docker engine: each runs with
``DOCKER_HOST`` naming a socket that does not exist, so a test that needs the engine
fails at once instead of passing only where one happens to run."""

from __future__ import annotations

import pytest

NO_ENGINE = "unix:///nonexistent/cligym-unit-tier/docker.sock"


@pytest.fixture(autouse=True)
def _no_engine(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE)
