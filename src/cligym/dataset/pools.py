"""Where units run: worker processes on this machine (``LocalPool``) or Ray tasks on a Ray
cluster (``RayPool``). Both take a unit key and hand back its outcome; the head process
alone decides what runs next and writes the ledger.

A local worker is a child process started by the command line given (the CLI's hidden
``dataset unit`` verb), so it handles SIGINT/SIGTERM like any cligym command and cleans up
its containers. The kernel kills it when the head dies (``PR_SET_PDEATHSIG``), so a head
killed with SIGKILL leaves no worker writing on; what the workers had running in the
engine is reaped by the next build.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import time
from pathlib import Path
from typing import Protocol

from cligym.errors import BadInput, EngineUnavailable
from cligym.layout import DatasetDir
from cligym.models.dataset import UnitOutcome

#: A finished unit: its key, its outcome and the seconds it took.
Finished = tuple[str, UnitOutcome, float]
_PR_SET_PDEATHSIG = 1


class Pool(Protocol):
    slots: int

    def submit(self, key: str, deadline: float | None, node: str | None) -> None: ...

    def wait(self, timeout: float) -> list[Finished]: ...

    def running(self) -> set[str]: ...

    def stop(self) -> None: ...


try:  # looked up here: between fork and exec the child only calls it
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: a worker of a killed head runs on until its unit ends
    _prctl = None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class LocalPool:
    """Up to ``slots`` worker processes, one per unit."""

    def __init__(self, dataset: DatasetDir, slots: int, command: list[str]) -> None:
        self.dataset, self.slots, self.command = dataset, slots, command
        self._procs: dict[str, tuple[subprocess.Popen, float]] = {}

    def submit(self, key: str, deadline: float | None, node: str | None) -> None:
        log = self.dataset.unit_file(key, "log")
        log.parent.mkdir(parents=True, exist_ok=True)
        args = [*self.command, str(self.dataset.path), key]
        if deadline is not None:
            args += ["--deadline", repr(deadline)]
        with open(log, "ab") as handle:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
                                    preexec_fn=_die_with_parent)
        self._procs[key] = (proc, time.monotonic())

    def running(self) -> set[str]:
        return set(self._procs)

    def wait(self, timeout: float) -> list[Finished]:
        end = time.monotonic() + timeout
        while True:
            finished = [(key, proc) for key, (proc, _) in self._procs.items() if proc.poll() is not None]
            if finished or time.monotonic() >= end:
                return [self._collect(key, proc) for key, proc in finished]
            time.sleep(0.2)

    def _collect(self, key: str, proc: subprocess.Popen) -> Finished:
        _, started = self._procs.pop(key)
        seconds = time.monotonic() - started
        if proc.returncode == EngineUnavailable.exit_code:
            raise EngineUnavailable(f"unit {key}: {_last_line(self.dataset.unit_file(key, 'log'))}")
        outcome = written_outcome(self.dataset, key)
        if outcome is None:
            if proc.returncode in (130, 143, -signal.SIGTERM, -signal.SIGINT):
                raise KeyboardInterrupt(f"unit {key} was interrupted")
            line = _last_line(self.dataset.unit_file(key, "log"))
            outcome = UnitOutcome(ok=False, detail=f"the worker exited {proc.returncode}: {line}")
        return key, outcome, seconds

    def stop(self) -> None:
        """SIGTERM every worker (each cleans up its containers) and wait for them."""
        for proc, _ in self._procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc, _ in self._procs.values():
            try:
                proc.wait(timeout=150)
            except subprocess.TimeoutExpired:
                proc.kill()
        self._procs.clear()


def _last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "no output"


def clear_outcome(dataset: DatasetDir, key: str) -> None:
    """Removes what an earlier run of the unit wrote; the head calls it before it marks the unit
    running, so an outcome found while the ledger says running is this run's."""
    dataset.unit_file(key, "json").unlink(missing_ok=True)


def written_outcome(dataset: DatasetDir, key: str) -> UnitOutcome | None:
    """The outcome a worker wrote for the unit, if any (no file time is compared: a file's time
    comes from the kernel's coarse clock and may read earlier than the head's start time)."""
    try:
        return UnitOutcome.model_validate_json(dataset.unit_file(key, "json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_outcome(dataset: DatasetDir, key: str, outcome: UnitOutcome) -> None:
    """The worker's side of ``LocalPool``: the outcome where the head looks for it."""
    from cligym.models.io import write_atomic

    write_atomic(dataset.unit_file(key, "json"), outcome.model_dump_json() + "\n")


def ray_pool(dataset: DatasetDir, address: str, workers: int | None, retries: int = 0) -> Pool:
    """A pool on the Ray cluster at ``address`` (``auto``: the one this machine belongs to);
    ``retries``: how often a unit whose node died is run again elsewhere."""
    try:
        from cligym.dataset.ray_pool import RayPool
    except ImportError:
        raise BadInput("--ray needs Ray: pip install 'cligym[ray]'") from None
    return RayPool(dataset, address, workers, retries)

