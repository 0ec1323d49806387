"""Where cligym keeps its host-side caches, and the defaults every stage shares."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Label put on every container and image cligym creates, so they can be found and removed.
LABEL = "cligym"

#: The default base image. It is a local name: when absent it is built with mmdebstrap,
#: never pulled (see ``cligym.runtime.base_image``).
DEFAULT_BASE_IMAGE = "cligym/base:bookworm-2"

#: Seconds all the runs of a gold suite may take together by default (the first pass, the
#: repeats that prove its tests stable, the run by node id): a suite whose runs would take
#: longer keeps a sample of its test files (``cligym.gold.shards``).
SUITE_BUDGET = 420.0
#: Containers one run of a gold suite is split into by default (its files divided between them).
SUITE_SHARDS = 2

#: Resource limits for every container (overridable per call).
DEFAULT_MEM_LIMIT = os.environ.get("CLIGYM_MEM_LIMIT", "2g")
DEFAULT_PIDS_LIMIT = int(os.environ.get("CLIGYM_PIDS_LIMIT", "512"))
DEFAULT_RUN_TIMEOUT = float(os.environ.get("CLIGYM_RUN_TIMEOUT", "900"))


def home() -> Path:
    """The host-side cache directory (wheelhouses, sdists, base-image recipes)."""
    root = os.environ.get("CLIGYM_HOME")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "cligym" if xdg else Path.home() / ".cache" / "cligym"


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (a folder, or a lock file made where missing):
    processes that do one thing to one place do it one at a time. The kernel releases the
    lock when its holder exits, however it ends (kill -9 included)."""
    if path.is_dir():
        fd = os.open(path, os.O_RDONLY)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class DebianImage:
    """Where a Debian gold image keeps what cligym put in it (docs/debian.md): the runner,
    its converters and tests list, and the apt repository of its debs."""

    CLIGYM = "/opt/cligym"
    RUNNER = f"{CLIGYM}/debian"
    DEBTEST = f"{RUNNER}/debtest.sh"  # the test command
    TESTS = f"{RUNNER}/tests.tsv"
    APT_REPO = f"{CLIGYM}/apt"
    DPKG_STATUS = "/var/lib/dpkg/status"
