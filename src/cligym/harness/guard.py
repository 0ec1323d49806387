"""The verifier's guard: what keeps the verifier out of the agent's reach in the agent's own
container, the way Harbor runs a task (its shared container: the agent's processes still
running, ``tests/`` uploaded into whatever ``/tests`` the agent left, every command started
as ``bash -c`` on the task's PATH).

An exported Harbor task ships a guard folder (``environment/cligym``) and a
``docker-compose.yaml`` that mounts it read-only at ``/cligym`` and puts ``/cligym/bin``
first on the container's PATH. ``/cligym/bin/bash`` is a small static program
(``scripts/guard-launcher.c``), so every command a harness starts begins there:

- the agent's commands run in the image's own bash after one capability is dropped from
  every set: nothing the agent starts can then trace (ptrace, ``/proc/PID/mem``) PID 1 or any
  later command of the harness, whose capabilities are a superset of its own;
- the harness's verifier-phase commands, in the exact forms Harbor writes them, run
  ``phase.sh`` under the guard's busybox: every other process is stopped first; the log
  folder is emptied (no link to follow); the uploaded tests must match the sums fixed at
  export (``tests.files``, ``tests.dirs``, ``tests.sha256``); the test script runs with its
  output in the verifier's log.

Nothing in the guard folder can be changed from inside the container (a read-only mount
that a process without ``CAP_SYS_ADMIN`` can neither unmount nor cover). cligym's own runner
preloads the same folder into the successor container it judges in and starts the verifier
through the same launcher, so both runners take the same path.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from cligym.config import home
from cligym.errors import CligymError
from cligym.harness.bundle import busybox_bytes, script
from cligym.layout import TaskDir

#: Where a harness mounts the guard folder (read-only) in the task's container.
GUARD_MOUNT = "/cligym"
#: What comes first on the container's PATH: the guard's launcher, named bash.
GUARD_BIN = f"{GUARD_MOUNT}/bin"
LAUNCHER_SOURCE = "guard-launcher.c"


class NoLauncher(CligymError):
    """The guard's static launcher cannot be built on this host."""


@functools.cache
def launcher_bytes() -> bytes:
    """The guard's launcher, a static executable built once per source (``cc -static``) and
    kept in the host cache."""
    source = resources.files("cligym.harness").joinpath("scripts", LAUNCHER_SOURCE).read_bytes()
    cached = home() / f"guard-launcher-{hashlib.sha256(source).hexdigest()[:16]}"
    if cached.is_file():
        return cached.read_bytes()
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise NoLauncher("no C compiler to build the verifier's guard (apt-get install gcc libc6-dev, "
                         "or run scripts/setup.sh)")
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cligym-guard-") as tmp:
        src, out = Path(tmp) / LAUNCHER_SOURCE, Path(tmp) / "launcher"
        src.write_bytes(source)
        built = subprocess.run([cc, "-static", "-Os", "-s", "-o", str(out), str(src)],
                               capture_output=True, text=True, timeout=300)
        if built.returncode != 0:
            raise NoLauncher(f"cannot build the verifier's guard with {cc} -static (apt-get install libc6-dev): "
                             f"{built.stderr.strip()[-500:]}")
        data = out.read_bytes()
        part = cached.with_name(f".{cached.name}.{os.getpid()}")
        part.write_bytes(data)
        part.replace(cached)  # another process may write the same bytes at once
    return data


def _sums(tests: Path) -> dict[str, str]:
    """tests.files, tests.dirs and tests.sha256: what phase.sh compares the upload with
    (paths as ``find .`` prints them, in C order)."""
    files = sorted(p for p in tests.rglob("*") if p.is_file() and not p.is_symlink())
    dirs = sorted([tests, *(p for p in tests.rglob("*") if p.is_dir() and not p.is_symlink())])

    def rel(p: Path) -> str:
        return "." if p == tests else f"./{p.relative_to(tests).as_posix()}"

    def lines(values: list[str]) -> str:
        return "".join(f"{v}\n" for v in sorted(values, key=lambda s: s.encode()))

    return {
        "tests.files": lines([rel(p) for p in files]),
        "tests.dirs": lines([rel(p) for p in dirs]),
        "tests.sha256": "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {rel(p)}\n" for p in files),
    }


def write_guard(task: TaskDir) -> None:
    """The task's guard folder, from its tests/ as written (so tests/ must be complete)."""
    folder = task.guard
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "bin").mkdir(parents=True)
    launcher = folder / "bin" / "bash"
    launcher.write_bytes(launcher_bytes())
    busybox = folder / "busybox"
    busybox.write_bytes(busybox_bytes())
    for path in (launcher, busybox):
        path.chmod(0o755)
    texts = {"phase.sh": script("phase.sh"), "sweep.sh": script("sweep.sh"), **_sums(task.tests)}
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")


def guarded_path(gold_path: str, dockerfile: list[str]) -> str | None:
    """The PATH the task's container gets: the guard's bin folder, then the task image's own
    PATH (gold's, or what ΔD's ``ENV PATH`` lines make of it). None when ΔD's PATH cannot be
    worked out here (it names another variable)."""
    path = gold_path
    for line in dockerfile:
        found = re.match(r"\s*ENV\s+PATH(?:=|\s+)(.*)$", line)
        if not found:
            continue
        value = found.group(1).strip().strip('"')
        value = re.sub(r"\$\{PATH\}|\$PATH\b", lambda _, before=path: before, value)
        if "$" in value or " " in value:
            return None
        path = value
    return f"{GUARD_BIN}:{path}"


def compose_yaml(task: TaskDir, path: str) -> str:
    """The task's ``environment/docker-compose.yaml``: the guard folder mounted read-only,
    and its launcher first on the container's PATH (Harbor merges this file over its own).
    Written as JSON, which is YAML too, so cligym reads it back without a YAML parser."""
    folder = task.guard.relative_to(task.environment).as_posix()
    main = {"volumes": [f"./{folder}:{GUARD_MOUNT}:ro"], "environment": {"PATH": path.replace("$", "$$")}}
    return json.dumps({"services": {"main": main}}, indent=2) + "\n"


def compose_env(task: TaskDir) -> dict[str, str]:
    """The container environment the task's compose file gives (none without one)."""
    if not task.harbor_compose.is_file():
        return {}
    main = json.loads(task.harbor_compose.read_text(encoding="utf-8"))["services"]["main"]
    return {k: v.replace("$$", "$") for k, v in main.get("environment", {}).items()}
