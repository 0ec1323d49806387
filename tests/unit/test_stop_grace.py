"""A command whose cleanup hangs after SIGTERM still ends, with 143, a line saying why,
and where its main thread stood (``cligym.cli.signals``), in a real child process."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from cligym.cli.signals import INTERRUPTED

CHILD = """
import sys, time
from cligym.cli import signals
signals.STOP_GRACE = {grace}
signals.catch_signals()
try:
    try:
        print("ready", flush=True)
        time.sleep(60)
    finally:
        {cleanup}
except KeyboardInterrupt:
    pass
sys.exit(signals.interrupted_exit_code())
"""

def _stop(grace: float, cleanup: str) -> tuple[subprocess.CompletedProcess, float]:
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(grace=grace, cleanup=cleanup)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_cleanup_that_hangs_is_cut_short_after_the_grace():
    done, took = _stop(1.0, "time.sleep(45)  # an engine call that does not answer")
    assert done.returncode == 143
    assert took < 40, "the hanging cleanup was waited for"
    lines = done.stderr.splitlines()
    assert lines[0].startswith("cligym: stopping took over 1 s; exiting now")
    assert any("in <module>" in line for line in lines), done.stderr  # the main thread's stack
    assert lines[-1] == INTERRUPTED


def test_a_cleanup_in_time_ends_the_process_normally():
    done, _ = _stop(30.0, "time.sleep(0.2)")
    assert done.returncode == 143 and done.stderr == ""


def test_a_second_sigterm_lets_the_cleanup_finish_within_the_grace():
    cleanup = "import os, signal as s; os.kill(os.getpid(), s.SIGTERM); time.sleep(0.5); print('cleaned', flush=True)"
    done, _ = _stop(30.0, cleanup)
    assert done.returncode == 143 and done.stdout.splitlines()[-1] == "cleaned", done.stderr


def test_an_interrupted_pair_of_containers_ends_without_waiting_for_the_other_one():
    """Two containers side by side: interrupted in this thread, the process removes its
    containers, which ends the other thread's engine call at once (else the stop waits
    out that call's timeout, and the grace runs out with containers left)."""
    import threading

    from cligym.harness.images import side_by_side

    removed = threading.Event()

    class Engine:  # stands in for the runtime: only the removal of this process's containers
        def remove_labelled_containers(self, *, mine: bool = False) -> int:
            assert mine
            removed.set()
            return 1

    def other() -> str:  # a long exec in a container: ends when the container goes
        return "ended by the removal" if removed.wait(30) else "ran out its timeout"

    def this() -> str:
        raise KeyboardInterrupt

    started = time.monotonic()
    try:
        side_by_side(Engine(), other, this)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the interruption was swallowed")
    assert removed.is_set() and time.monotonic() - started < 10
