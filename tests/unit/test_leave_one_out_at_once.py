"""Leave-one-repair-out runs its containers at once (each judges the broken image alone),
and says, per step in the steps' order, what stays failing without it."""

from __future__ import annotations

import threading
import time

from cligym.invert import minimal
from cligym.models.task import RepairStep
from cligym.models.timing import PhaseSeconds
from tests.unit.fake_engine import gold_env


def test_each_step_left_out_runs_in_its_own_container_at_once_and_keeps_its_place(monkeypatch):
    running, most = [], []
    lock = threading.Lock()

    def still_failing(runtime, gold, image, script, tests):
        with lock:
            running.append(script)
            most.append(len(running))
        time.sleep(0.2)
        with lock:
            running.remove(script)
        return [] if "step-b" in script else list(tests)  # only b's repair matters

    monkeypatch.setattr(minimal, "_still_failing", still_failing)
    steps = [RepairStep(label=f"op{name}", lines=[f"echo step-{name}"]) for name in "abc"]
    seconds = PhaseSeconds()
    out = minimal.leave_one_out(None, gold_env(["t.py::x"]), "broken", steps, ["t.py::x"], ["t.py::x"], seconds)
    assert out == [[], ["t.py::x"], []]  # without b's repair the test fails; a's and c's are not needed
    assert max(most) == 3 and 0 < seconds.minimal < 0.5
