"""A running container kept for several commands: exec, copies in and out, diff, commit."""

from __future__ import annotations

import io
import itertools
import json
import shlex
import tarfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import docker.errors

from cligym.config import DEFAULT_RUN_TIMEOUT
from cligym.errors import EngineError
from cligym.runtime.common import (
    Files,
    PathChange,
    RunResult,
    argv,
    tail,
    tar_files,
    untar_one,
)
from cligym.runtime.names import ImageKind
from cligym.runtime.owner import owner_labels
from cligym.runtime.translate import engine_call, is_missing_container

if TYPE_CHECKING:
    from cligym.runtime.containers import Containers


_SUCCESSORS = itertools.count(1)


def tar_dirs(dirs: list[tuple[Path, str]]) -> bytes:
    """A tar holding each host directory ``src`` as its ``dest`` (an absolute path)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for src, dest in dirs:
            tar.add(src, arcname=dest.lstrip("/"))
    return buf.getvalue()


#: What enforces an exec's time limit inside the container unless told otherwise: the
#: image's coreutils ``timeout``, its process tree killed 5 s after the signal.
TIMER = ("timeout", "-k", "5")


class Session:
    """A running container kept for several ``exec`` calls; removed on ``close``.

    Made by ``Runtime.session``; every engine failure of its methods is a cligym error.
    """

    def __init__(self, runtime: Containers, container) -> None:
        self._runtime = runtime
        self._container = container

    @property
    def id(self) -> str:
        return self._container.id

    def exec(
        self,
        command: str | list[str],
        *,
        timeout: float = DEFAULT_RUN_TIMEOUT,
        workdir: str | None = None,
        env: Mapping[str, str] | None = None,
        timer: tuple[str, ...] | None = TIMER,
    ) -> RunResult:
        """Run ``command`` (a shell string, or an argv list) with a wall-clock limit.

        The limit is enforced inside the container by ``timer`` (coreutils ``timeout`` of
        the image unless another is named, e.g. a busybox of one's own) so the process tree
        is killed, not merely abandoned; ``timer=None`` runs the command as it is, with no
        limit (as a harness that sets none would).
        """
        code, output, seconds, timed_out = self._exec(command, timeout, workdir, env, timer)
        return RunResult(code, tail(output), seconds, timed_out)

    @engine_call("cannot exec in container {self.id:.12}")
    def _exec(self, command: str | list[str], timeout: float, workdir: str | None, env: Mapping[str, str] | None,
              timer: tuple[str, ...] | None) -> tuple[int, bytes, float, bool]:
        """``exec``'s run: the exit code, the whole output, the seconds and whether it timed out."""
        secs = max(1, int(timeout))
        wrapped = [*timer, str(secs), *argv(command)] if timer else argv(command)
        start = time.monotonic()
        result = self._container.exec_run(wrapped, workdir=workdir, environment=dict(env) if env else None)
        seconds = time.monotonic() - start
        code = result.exit_code
        return code, result.output or b"", seconds, code in (124, 137) and seconds >= secs - 0.5

    def exec_then_read(self, command: list[str], path: str, *, timeout: float, shell: tuple[str, ...] = ("sh",),
                       cat: tuple[str, ...] = ("cat",)) -> tuple[RunResult, bytes | None]:
        """``exec(command)``, then the file at ``path`` as ``get_file`` reads it, in one
        engine call: ``shell`` (the container's sh unless another is named, e.g. a busybox
        of one's own, with its ``cat``) runs the command, then prints the file (a regular
        file, not a link) after a random mark no output holds by chance, all into one
        stream (stdout and stderr are two pipes whose order the engine does not keep: what
        the command wrote last to one could come after the mark). When it could not print it (no such
        mark: its ``cat`` broken, the command killed at its timeout, a process left behind
        writing after it), the file is read with ``get_file``. Not for a container an agent
        has used: its cat then runs with the caller's capabilities, and its processes can
        read the mark in the wrapper's arguments."""
        mark = uuid.uuid4().hex
        script = ('exec 2>&1; mark=$1 path=$2; shift 2; "$@"; code=$?; printf "\\n%s\\n" "$mark"; '
                  f'if [ -f "$path" ] && [ ! -L "$path" ]; then {shlex.join(cat)} "$path" && '
                  'printf "\\n%s-end\\n" "$mark"; else printf "%s-none\\n" "$mark"; fi; exit $code')
        code, output, seconds, timed_out = self._exec([*shell, "-c", script, "sh", mark, path, *command], timeout,
                                                      None, None, TIMER)
        before, found, rest = output.partition(f"\n{mark}\n".encode())
        if found and rest == f"{mark}-none\n".encode():
            data = None
        elif found and rest.endswith(end := f"\n{mark}-end\n".encode()):
            data = rest[:-len(end)]
        else:
            data = self.get_file(path)  # (what the command printed is still what came before the mark)
        return RunResult(code, tail(before), seconds, timed_out), data

    def put_files(self, files: Files) -> None:
        """Write files (absolute paths) into the container; parent directories must exist."""
        self.put_archive(tar_files(files), "/")

    @engine_call("cannot copy files into container {self.id:.12} at {path}")
    def put_archive(self, data: bytes, path: str = "/") -> None:
        """Unpack a tar archive (bytes) into the container at ``path``."""
        if not self._container.put_archive(path, data):
            raise EngineError(f"cannot copy files into container {self.id[:12]} at {path}")

    def upload_dir(self, src: Path, dest: str) -> None:
        """Copy a host directory into the container as ``dest`` (an absolute path)."""
        self.put_archive(tar_dirs([(src, dest)]))

    def get_file(self, path: str) -> bytes | None:
        """Read one regular file out of the container, or None if it does not exist (or is
        a directory or a symlink)."""
        data = self.get_archive(path)
        return None if data is None else untar_one(data)

    @engine_call("cannot read {path} from container {self.id:.12}")
    def get_archive(self, path: str) -> bytes | None:
        """A tar of ``path`` (file or directory, named by its last component), or None
        if the path does not exist. A removed container is an error, not None."""
        try:
            chunks, _ = self._container.get_archive(path)
        except docker.errors.NotFound as exc:
            if is_missing_container(exc):
                raise
            return None
        return b"".join(chunks)

    @engine_call("cannot diff container {self.id:.12}")
    def diff(self) -> list[PathChange]:
        """The container's filesystem changes against its image."""
        kinds = {0: "C", 1: "A", 2: "D"}
        return [PathChange(kinds[item["Kind"]], item["Path"]) for item in self._container.diff() or []]

    @engine_call("cannot commit container {self.id:.12} as {repository}:{tag}")
    def commit(self, repository: str, tag: str, *, changes: list[str] | None = None) -> str:
        """Commit the container to ``repository:tag``; returns the image id. The image
        carries the labels of this process's run, like every image the runtime makes."""
        owner = " ".join(f"{key}={json.dumps(value)}" for key, value in owner_labels().items())
        image = self._container.commit(repository=repository, tag=tag, changes=[f"LABEL {owner}", *(changes or [])])
        return image.id

    @contextmanager
    def successor(self, keepalive: tuple[str, ...], preload: bytes) -> Iterator[Session]:
        """A new container holding this one's filesystem as it is now (committed to a
        scratch image), with none of its processes: ``preload`` (a tar) is unpacked into it
        before it starts with PID 1 running ``keepalive``. Removed with that image on exit."""
        ref = ImageKind.SUCCESSOR.tag("", str(next(_SUCCESSORS)))
        try:
            self.commit(*ref.split(":"))
            with self._runtime.session(ref, keepalive=keepalive, preload=preload) as fresh:
                yield fresh
        finally:
            self._runtime.remove_image(ref)

    def close(self) -> None:
        """Remove the container (a second close, or a container already gone, is fine)."""
        self._runtime._remove_container(self._container.id)
