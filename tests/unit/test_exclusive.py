"""``config.exclusive``: one holder at a time across processes, and a killed holder's lock
is free at once (the kernel drops it with the process)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from cligym.config import exclusive

HOLD = "import sys, time; from pathlib import Path; from cligym.config import exclusive\n" \
       "with exclusive(Path(sys.argv[1])):\n    print('held', flush=True)\n    time.sleep(60)\n"


def _holder(lock: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def _taken_after(lock: Path, release) -> float:
    """Seconds until this process gets ``lock`` when ``release`` runs 1 s after asking."""
    timer = threading.Timer(1.0, release)
    started = time.monotonic()
    timer.start()
    with exclusive(lock):
        waited = time.monotonic() - started
    timer.join()
    return waited


def test_a_second_holder_waits_until_a_killed_first_one_is_gone(tmp_path):
    lock = tmp_path / "locks" / "gold.lock"  # its folder is made
    proc = _holder(lock)
    try:
        assert _taken_after(lock, lambda: proc.send_signal(signal.SIGKILL)) >= 0.9
    finally:
        proc.kill()
        proc.wait()


def test_a_folder_is_locked_in_place_and_a_free_lock_is_taken_at_once(tmp_path):
    proc = _holder(tmp_path)
    try:
        assert _taken_after(tmp_path, proc.terminate) >= 0.9
    finally:
        proc.kill()
        proc.wait()
    with exclusive(tmp_path):
        assert sorted(p.name for p in tmp_path.iterdir()) == []  # no lock file beside the folder's files
