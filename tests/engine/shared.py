"""Things a test run makes once, however many pytest-xdist workers run it.

A worker that needs a shared thing (a gold environment, an operator run, an exported task
set) takes the thing's file lock in the run's common temporary folder: the first one
makes it there, the others wait and read what it made. Every worker reads it only.

Gold images are shared by content, and each process holds the images it uses
(``cligym.runtime.holds``), so the worker that built an image does not remove it while
another worker still uses it; the image then outlives both. Each worker writes the shared
tags it made and could not remove to ``left-<worker>.txt``, and the controller removes
them once every worker has ended (``finish``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
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


def left_file(root: Path) -> Path:
    return root / f"left-{worker()}.txt"


#: Shared tags a test run could not remove because another test run on the same engine
#: (another pytest) still held them, each with the image it named: the next run to finish
#: removes those that still name that image and that no live process holds.
HANDED_ON = Path(tempfile.gettempdir()) / "cligym-test-shared-tags.txt"


def finish(root: Path) -> None:
    """In the controller, once every worker has ended: remove the shared tags the workers
    made and left because another worker held them then, and those an earlier test run
    handed on; hand on what another live test run still holds."""
    from cligym.runtime import Runtime

    files = sorted(root.glob("left-*.txt"))
    tags = {t for f in files for t in f.read_text().split()}
    if not tags and not HANDED_ON.exists():
        return  # nothing to remove or hand on (the unit tier alone, which needs no engine)
    runtime = Runtime()
    with FileLock(str(HANDED_ON) + ".lock"):
        handed = dict(line.split(" ", 1) for line in HANDED_ON.read_text().splitlines() if " " in line) \
            if HANDED_ON.exists() else {}
        named = {tag: runtime.image_id(tag) for tag in tags if runtime.image_exists(tag)}
        for tag, image_id in handed.items():  # only where the tag still names what a test run made
            if runtime.image_exists(tag) and runtime.image_id(tag) == image_id:
                named.setdefault(tag, image_id)
        still = {tag: image_id for tag, image_id in sorted(named.items()) if not runtime.remove_shared(tag)}
        if still:
            HANDED_ON.write_text("".join(f"{tag} {image_id}\n" for tag, image_id in still.items()))
        else:
            HANDED_ON.unlink(missing_ok=True)
    for f in files:
        f.unlink()
