"""Things a test run makes once, however many pytest-xdist workers run it.

A worker that needs a shared thing (a gold environment, an operator run, an exported task
set) takes the thing's file lock in the run's common temporary folder: the first one
makes it there, the others wait and read what it made. Every worker reads it only.

Gold images are a cache shared by content (``cligym.runtime.names``): no worker removes one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

DONE = ".done"


def worker() -> str:
    """This process's xdist worker id ("gw0", ...), or "main" without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def run_root(factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this run sees (the base temp folder's parent under
    xdist, whose workers each get a subfolder of it)."""
    base = factory.getbasetemp()
    return base.parent if worker() != "main" else base


def once(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder ``name`` made by ``make(folder)`` once per test run; a worker that
    failed half-way leaves nothing another one would take for done."""
    root = run_root(factory) / "shared"
    root.mkdir(exist_ok=True)
    folder = root / name
    with FileLock(str(root / f"{name}.lock")):
        if not (folder / DONE).exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / DONE).touch()
    return folder
