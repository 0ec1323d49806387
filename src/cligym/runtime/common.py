"""What the runtime's modules share: the records callers get back, the labels, and the
tar and output helpers."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from cligym.config import LABEL

#: Label naming the process that created a container (so concurrent runs can tell theirs).
OWNER = f"{LABEL}.pid"

#: How much output a run keeps (the tail), so a chatty test suite cannot exhaust memory.
MAX_OUTPUT = 4 * 1024 * 1024

#: Files to put into a container: path -> content (bytes or text) or (content, mode).
Files = Mapping[str, bytes | str | tuple[bytes | str, int]]


@dataclass
class RunResult:
    """What a command in a container did."""

    exit_code: int | None
    output: str
    seconds: float
    timed_out: bool = False
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True)
class PathChange:
    """One entry of a container's filesystem diff against its image."""

    kind: str  # "A" added, "C" changed, "D" deleted
    path: str


def tar_files(files: Files) -> bytes:
    """A tar of ``files`` (paths relative to the root the archive is unpacked at)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, spec in files.items():
            content, mode = spec if isinstance(spec, tuple) else (spec, 0o644)
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name=str(PurePosixPath(path)).lstrip("/"))
            info.size = len(data)
            info.mode = mode
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def untar_one(data: bytes) -> bytes | None:
    """The content of the archive's first member if it is a regular file, else None.

    The engine archives a path as one member named by its last component (a directory
    comes with its contents after it), so a directory or a symlink gives None.
    """
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        member = tar.next()
        if member is None or not member.isfile():
            return None
        handle = tar.extractfile(member)
        return handle.read() if handle else None


def tail(data: bytes) -> str:
    """Output as text, cut to its last MAX_OUTPUT bytes."""
    if len(data) > MAX_OUTPUT:
        data = b"[... output cut ...]\n" + data[-MAX_OUTPUT:]
    return data.decode("utf-8", errors="replace")


def argv(command: str | list[str]) -> list[str]:
    """A shell string as ``sh -c``; an argv list as is."""
    return ["sh", "-c", command] if isinstance(command, str) else list(command)
