"""``Runtime``: the image, container and registry halves on one engine client, and the
sweeps that remove what ended or interrupted runs left (``reap_dead_runs``, ``remove_own``).

It knows nothing of gold environments, operators or tasks. No method takes or returns an
SDK object, and every engine failure is a ``CligymError`` (``EngineUnavailable``,
``EngineError`` or ``BuildFailed``, see ``cligym.runtime.translate``).
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple

import docker

from cligym.config import DEFAULT_MEM_LIMIT, DEFAULT_PIDS_LIMIT
from cligym.errors import CligymError, EngineUnavailable
from cligym.runtime.containers import Containers
from cligym.runtime.pruning import Removals
from cligym.runtime.registry import Registries
from cligym.runtime.translate import ENGINE_HINT, detail, engine_call

#: Seconds an engine call may take before it counts as failed (builds and long runs too).
CALL_TIMEOUT = 3600
#: Seconds the engine has to answer the first call, so a hung engine fails fast.
PING_TIMEOUT = 10  # a healthy local engine answers a ping in milliseconds


class Reaped(NamedTuple):
    """How many containers and images ``Runtime.reap_dead_runs`` removed."""

    containers: int
    images: int


class Runtime(Removals, Registries, Containers):
    """Docker Engine access with cligym's safety defaults.

    ``base_url`` names the engine (``unix:///path/docker.sock``, ``tcp://host:port``);
    by default DOCKER_HOST, else the local socket. Raises EngineUnavailable when the
    engine does not answer within ``ping_timeout`` seconds.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        mem_limit: str = DEFAULT_MEM_LIMIT,
        pids_limit: int = DEFAULT_PIDS_LIMIT,
        timeout: float = CALL_TIMEOUT,
        ping_timeout: float = PING_TIMEOUT,
    ) -> None:
        self._client = _connect(base_url, timeout=timeout, ping_timeout=ping_timeout)
        _engines_used.add(base_url)
        self._api = self._client.api
        self.mem_limit = mem_limit
        self.pids_limit = pids_limit

    def reap_dead_runs(self) -> Reaped:
        """Remove what runs that have ended left behind: their containers, and those of
        their images that are untagged or whose every tag names a scratch image
        (``cligym.runtime.names``). Cache images (base, gold) stay, whoever made them. Live
        runs are never touched: their build steps carry their own labels (``labelled``),
        untagged images are removed without force, so the engine keeps one that a
        container or a child image uses."""
        containers = self.remove_containers(self.dead_containers())
        return Reaped(containers, self._remove_listed(self.reapable_images()))

    def remove_own(self, *, settle: float = 1.0, limit: float = 20.0) -> int:
        """Remove what this process made that is not a cache entry (its containers and
        ``own_images``), again until two listings ``settle`` seconds apart find none, for at
        most ``limit`` seconds: after an interruption the engine still finishes a commit or
        build step whose call was abandoned. Returns how many things it removed."""
        removed = quiet = 0
        deadline = time.monotonic() + limit
        while quiet < 2 and time.monotonic() < deadline:
            containers, images = self.labelled_containers(mine=True), self.own_images()
            quiet = 0 if containers or images else quiet + 1
            removed += self.remove_containers(containers) + len(images)
            self._remove_listed(images)
            if quiet < 2:
                time.sleep(settle)
        return removed

    @engine_call("cannot ask the engine for its resources")
    def capacity(self) -> tuple[int, int]:
        """The engine's CPUs and memory in bytes (what its containers can share)."""
        info = self._client.info()
        return int(info.get("NCPU") or 1), int(info.get("MemTotal") or 0)

    def close(self) -> None:
        """Drop the connections to the engine (the runtime is not used afterwards)."""
        self._client.close()


#: The engines (``base_url``, None for the default) this process connected to.
_engines_used: set[str | None] = set()


def remove_own_everywhere() -> int:
    """``Runtime.remove_own`` on every engine this process connected to (none: nothing to
    do, no connection made); an engine that is gone is skipped. For the end of an
    interrupted command. Returns how many things went."""
    removed = 0
    for base_url in sorted(_engines_used, key=str):
        try:
            removed += Runtime(base_url).remove_own()
        except CligymError:
            pass
    return removed


def _connect(base_url: str | None, *, timeout: float, ping_timeout: float) -> docker.DockerClient:
    """A client for the engine, after it answered a ping within ``ping_timeout``.

    The SDK asks the engine its API version while it connects; that first exchange and the
    ping run on a short-lived client with the short timeout, the client kept has the long one.
    """
    environment = dict(os.environ)
    if base_url:
        environment["DOCKER_HOST"] = base_url
    where = environment.get("DOCKER_HOST") or "the local socket"
    try:
        probe = docker.from_env(timeout=ping_timeout, environment=environment)
        try:
            probe.ping()
            version = probe.api.api_version
        finally:
            probe.close()
        return docker.from_env(timeout=timeout, version=version, environment=environment)
    except Exception as exc:  # the SDK raises several unrelated types here
        raise EngineUnavailable(
            f"the Docker engine is not reachable at {where} ({detail(exc)}); {ENGINE_HINT}"
        ) from exc
