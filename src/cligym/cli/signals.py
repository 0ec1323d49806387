"""SIGTERM and SIGINT end a command like Ctrl-C: a KeyboardInterrupt is raised in the main
thread, so every cleanup on the way out runs.

The cleanup gets ``STOP_GRACE`` seconds. A command still alive after that (an engine call
that does not answer, an exception swallowed where it was raised) writes where its main
thread stands and exits at once with the same code; what it leaves behind the next long
command reaps, as after ``kill -9``. Whoever sent SIGTERM can count on the process ending.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading

INTERRUPTED = "cligym: interrupted (finished records are kept; run the same command to resume)"

#: Seconds the cleanup after the first signal may take before the process exits anyway.
STOP_GRACE = 120.0


#: The signals received so far, first first.
received: list[int] = []


def _on_signal(signum: int, _frame) -> None:
    first = not received
    received.append(signum)
    if first:
        timer = threading.Timer(STOP_GRACE, _exit_now, args=(STOP_GRACE,))
        timer.daemon = True  # a cleanup that finishes in time ends the process without it
        timer.start()
    elif signum == signal.SIGTERM:
        return  # already stopping: a repeated SIGTERM lets the cleanup finish
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _exit_now(grace: float) -> None:
    """The cleanup overran: say so, show where each thread stands, end the process."""
    code = interrupted_exit_code()
    try:
        sys.stderr.write(f"cligym: stopping took over {grace:.0f} s; exiting now "
                         "(the next run removes what this one leaves)\n")
        sys.stderr.flush()
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.write(INTERRUPTED + "\n")
        sys.stderr.flush()
    finally:
        os._exit(code)


def catch_signals() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread (``received`` says which)."""
    received.clear()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_signal)


def interrupted_exit_code() -> int:
    """128 + the first signal received (130 for SIGINT, 143 for SIGTERM); 130 when the
    interruption was a KeyboardInterrupt no signal of ours raised."""
    return 128 + (received[0] if received else signal.SIGINT)
