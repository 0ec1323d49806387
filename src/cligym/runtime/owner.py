"""Who made a container or an image, and whether that run is still alive.

Every container and image the runtime makes carries, besides the ``cligym`` label:

- ``cligym.pid``: the process that made it;
- ``cligym.run``: a random id, one per process (a forked child gets its own);
- ``cligym.started``: the process's start time (field 22 of ``/proc/<pid>/stat``, clock
  ticks after boot), so a later process that got the same pid is not taken for the owner;
- ``cligym.boot``: the kernel's boot id (``/proc/sys/kernel/random/boot_id``), so a
  container that outlived a reboot is known to be orphaned;
- ``cligym.host`` and ``cligym.pidns``: the host name and the pid namespace, because a
  pid says nothing about another machine's processes (two hosts may share one engine) nor
  about another pid namespace's (a cligym in a container with the engine's socket).

``owner_alive`` reads them back. Whatever it cannot decide counts as alive: things with no
owner label (the base image, images loaded from a tar) and things another host made are
never a dead run's leftovers, and nor is anything another host or pid namespace made.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from pathlib import Path

from cligym.config import LABEL
from cligym.runtime.common import OWNER

RUN = f"{LABEL}.run"
STARTED = f"{LABEL}.started"
BOOT = f"{LABEL}.boot"
HOST = f"{LABEL}.host"
PIDNS = f"{LABEL}.pidns"
#: A container's own name, set by cligym when it creates one. An image built FROM a cligym
#: image (an exported task's, by Harbor) hands every other label on to the containers
#: others run from it; a name it cannot hand on, so this label tells cligym's own apart.
NAME = f"{LABEL}.name"

_PROC = Path("/proc")
_run_ids: dict[int, str] = {}


def run_id() -> str:
    """This process's run id (a fresh one in a forked child)."""
    pid = os.getpid()
    if pid not in _run_ids:
        _run_ids[pid] = uuid.uuid4().hex
    return _run_ids[pid]


def boot_id() -> str:
    """The running kernel's boot id, or "" where there is none to read."""
    try:
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        return ""


def _stat(pid: int) -> list[str] | None:
    """Fields 3 onwards of ``/proc/<pid>/stat`` (state first), or None when unreadable."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except (OSError, ValueError):
        return None
    # the command name (field 2) is in parentheses and may hold spaces or parentheses
    fields = stat[stat.rfind(")") + 2:].split()
    return fields if len(fields) > 19 else None


def start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks after boot, as text), or None when there is
    no such process (or no /proc to ask)."""
    fields = _stat(pid)
    return fields[19] if fields else None


def pid_namespace() -> str:
    """This process's pid namespace (``pid:[inode]``), or "" where there is none to read."""
    try:
        return os.readlink(_PROC / "self" / "ns" / "pid")
    except OSError:
        return ""


def owner_labels() -> dict[str, str]:
    """The labels naming this process as the owner of what it creates."""
    pid = os.getpid()
    return {
        LABEL: "1",
        OWNER: str(pid),
        RUN: run_id(),
        STARTED: start_time(pid) or "",
        BOOT: boot_id(),
        HOST: socket.gethostname(),
        PIDNS: pid_namespace(),
    }


def made_by_cligym(container: Mapping) -> bool:
    """Whether a container (as the engine lists it) is one cligym created, not one another
    tool ran from an image that inherited cligym's labels."""
    labels = container.get("Labels") or {}
    names = [n.lstrip("/") for n in container.get("Names") or []]
    return bool(labels.get(NAME)) and labels.get(NAME) in names


def owned(labels: Mapping[str, str] | None) -> bool:
    """Whether the labels name an owning process at all."""
    return bool(labels and labels.get(OWNER, "").isdigit())


def owner_alive(labels: Mapping[str, str] | None) -> bool:
    """Whether the run that made a container or image (its labels) may still be running.

    False only when it surely is not: made on this host and in this pid namespace, and
    either before the last boot, or by a process that no longer exists, or by an earlier
    process with the same pid.
    """
    if not owned(labels):
        return True
    assert labels is not None
    host = labels.get(HOST)
    if host and host != socket.gethostname():
        return True  # another machine's process: nothing here can tell
    if labels.get(PIDNS, "") != pid_namespace():
        return True  # another pid namespace's process (or unnamed): nothing here can tell
    boot, now = labels.get(BOOT), boot_id()
    if boot and now and boot != now:
        return False
    pid = int(labels[OWNER])
    if not _process_exists(pid):
        return False
    started = labels.get(STARTED)
    current = start_time(pid)
    return not (started and current and started != current)


def _process_exists(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    if pid <= 0:
        return False
    if _PROC.joinpath("self", "stat").exists():
        fields = _stat(pid)
        return fields is not None and fields[0] not in ("Z", "X")
    try:  # no /proc (not Linux): ask the kernel
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
