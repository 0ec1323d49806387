"""Containers: one-shot runs, long-lived sessions, and the removal of what cligym made.

Every container runs with ``network_mode="none"``, a memory limit and a pids limit, and
carries the ``cligym`` label and the labels of the run that made it (``cligym.runtime.owner``).
A container is removed when the step ends, whether it succeeded, failed, raised or timed
out; those of a run killed before it could remove them are listed by ``dead_containers``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress

import docker
import docker.errors
import requests.exceptions

from cligym.config import DEFAULT_RUN_TIMEOUT, LABEL
from cligym.errors import CligymError, EngineError
from cligym.runtime.common import (
    OWNER,
    Files,
    RunResult,
    argv,
    tail,
    tar_files,
    untar_one,
)
from cligym.runtime.names import container_name
from cligym.runtime.owner import NAME, RUN, made_by_cligym, owned, owner_alive, owner_labels, run_id
from cligym.runtime.sessions import Session
from cligym.runtime.translate import detail, engine_call, engine_errors, is_timeout


class Containers:
    """The container half of ``Runtime`` (which provides the engine client and limits)."""

    _client: docker.DockerClient
    _api: docker.APIClient
    mem_limit: str
    pids_limit: int

    def run(
        self,
        image: str,
        command: str | list[str],
        *,
        timeout: float = DEFAULT_RUN_TIMEOUT,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        files: Files | None = None,
        fetch: Iterable[str] = (),
        labels: Mapping[str, str] | None = None,
    ) -> RunResult:
        """Run one command in a fresh container and remove it afterwards.

        ``files`` are copied in before start; paths in ``fetch`` are copied out after the
        command ends (missing ones are left out of ``RunResult.files``). A command still
        running after ``timeout`` seconds is killed and the result says ``timed_out``.
        """
        container = self._create(image, argv(command), workdir=workdir, env=env, labels=labels)
        try:
            return self._run_created(container, image, timeout=timeout, files=files, fetch=fetch)
        finally:
            self._remove_container(container.id)

    @engine_call("cannot run a container from {image}")
    def _run_created(self, container, image: str, *, timeout: float, files: Files | None,
                     fetch: Iterable[str]) -> RunResult:
        start = time.monotonic()
        if files:
            container.put_archive("/", tar_files(files))
        container.start()
        code, timed_out = _wait(container, timeout)
        seconds = time.monotonic() - start
        try:
            output = tail(container.logs(stdout=True, stderr=True) or b"")
        except docker.errors.APIError as exc:  # e.g. the engine already marked it dead
            output = f"[output unavailable: {detail(exc)}]"
        got: dict[str, bytes] = {}
        for path in fetch:
            try:
                chunks, _ = container.get_archive(path)
                data = untar_one(b"".join(chunks))
            except docker.errors.APIError:
                data = None
            if data is not None:
                got[path] = data
        return RunResult(code, output, seconds, timed_out, got)

    @contextmanager
    def session(
        self,
        image: str,
        *,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        keepalive: tuple[str, ...] = ("sleep", "infinity"),
        preload: bytes | None = None,
        read_only: Mapping[str, str] | None = None,
    ) -> Iterator[Session]:
        """A started container (PID 1 runs ``keepalive``) for several exec calls; always
        removed. ``preload``, a tar, is unpacked at / before the container starts (so PID 1
        can be a program of one's own). ``read_only`` bind-mounts host folders (host path →
        container path) read-only, as a task's compose file does; the engine must then run on
        this host. Only the runtime's own steps are translated: what the body raises passes
        as it is."""
        container = self._create(image, list(keepalive), workdir=workdir, env=env, labels=labels, read_only=read_only)
        session = Session(self, container)
        try:
            if preload is not None:
                session.put_archive(preload)
            with engine_errors(f"cannot start a container from {image}"):
                container.start()
            yield session
        finally:
            session.close()

    def labelled_containers(self, *, mine: bool = False, pid: int | None = None) -> list[str]:
        """Ids of every container (running or not) cligym created; with ``mine``, only
        those this process created, with ``pid`` those process ``pid`` created. Containers
        other tools run from images that inherited cligym's labels are not among them."""
        label = f"{RUN}={run_id()}" if mine else f"{OWNER}={pid}" if pid is not None else LABEL
        with engine_errors("cannot list containers"):
            return [c["Id"] for c in self._api.containers(all=True, filters={"label": label}) if made_by_cligym(c)]

    def dead_containers(self) -> list[str]:
        """Ids of the cligym containers whose owning run has ended (killed before it could
        remove them); containers of live runs, of other hosts, with no owner, or not created
        by cligym (``made_by_cligym``) are left out."""
        with engine_errors("cannot list containers"):
            found = self._api.containers(all=True, filters={"label": OWNER})
        return [c["Id"] for c in found
                if made_by_cligym(c) and owned(c.get("Labels")) and not owner_alive(c.get("Labels"))]

    def remove_containers(self, ids: Iterable[str]) -> int:
        """Remove these containers (ones already gone are fine); returns how many were asked."""
        ids = list(ids)
        for cid in ids:
            self._remove_container(cid)
        return len(ids)

    def remove_labelled_containers(self, *, mine: bool = False) -> int:
        """Remove the containers ``labelled_containers`` lists; returns how many there were."""
        return self.remove_containers(self.labelled_containers(mine=mine))

    # ---- helpers ---------------------------------------------------------------------

    @engine_call("cannot create a container from {image}")
    def _create(
        self,
        image: str,
        command: list[str],
        *,
        workdir: str | None,
        env: Mapping[str, str] | None,
        labels: Mapping[str, str] | None,
        read_only: Mapping[str, str] | None = None,
    ):
        """A created (not started) container with cligym's limits and labels."""
        name = container_name()
        try:
            return self._client.containers.create(
                image,
                command,
                name=name,
                detach=True,
                network_mode="none",
                mem_limit=self.mem_limit,
                memswap_limit=self.mem_limit,
                pids_limit=self.pids_limit,
                labels={**owner_labels(), **(labels or {}), NAME: name},
                working_dir=workdir,
                environment=dict(env) if env else None,
                volumes={host: {"bind": dest, "mode": "ro"} for host, dest in (read_only or {}).items()} or None,
            )
        except docker.errors.ImageNotFound as exc:
            raise EngineError(f"image {image} is not present in the Docker engine") from exc
        except BaseException:
            # e.g. a signal's KeyboardInterrupt after the engine made it but before its id came
            # back: nobody else could remove it (the engine takes its name for an id)
            with suppress(CligymError):
                self._remove_container(name)
            raise

    @engine_call("cannot remove container {container_id:.12}")
    def _remove_container(self, container_id: str) -> None:
        """Remove a container and its volumes; one already gone (or going) is fine."""
        try:
            self._api.remove_container(container_id, force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            # a removal already in progress is waited for; anything else is worth a retry
            if "in progress" in str(exc):
                self._wait_gone(container_id)
                return
            time.sleep(0.5)
            try:
                self._api.remove_container(container_id, force=True, v=True)
            except docker.errors.NotFound:
                pass

    def _wait_gone(self, container_id: str, seconds: float = 30.0) -> None:
        """Until the engine no longer knows the container (at most ``seconds``)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                self._api.inspect_container(container_id)
            except docker.errors.NotFound:
                return
            time.sleep(0.2)


def _wait(container, timeout: float) -> tuple[int | None, bool]:
    """``(exit code, timed out)``: wait up to ``timeout`` seconds, then kill."""
    try:
        return container.wait(timeout=timeout).get("StatusCode"), False
    except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError) as exc:
        if not is_timeout(exc):
            raise  # the engine went away: not a timeout of the command
    try:
        container.kill()
    except docker.errors.APIError:
        pass  # it ended meanwhile
    return None, True
