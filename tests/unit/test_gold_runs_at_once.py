"""Gold's last two suite runs run at once: a test that passes only on an idle machine (a
timing test) fails in one of them and is flaky, not a gold test that later fails a task's
validation under load."""

from __future__ import annotations

import threading
import time

from cligym.gold import suite
from cligym.models.testrun import TestResult, TestRun
from cligym.ui import Reporter
from tests.unit.fake_engine import gold_env

TESTS = ["t.py::fast", "t.py::timing"]


def test_the_last_two_runs_overlap_and_a_test_failing_under_their_load_is_flaky(monkeypatch):
    busy = threading.Semaphore(2)
    spans: list[tuple[float, float]] = []
    running = []

    def one_run(*_args) -> TestRun:
        started = time.monotonic()
        with busy:
            running.append(1)
            time.sleep(0.3)
            loaded = len(running) > 1  # another run is going on at the same time
            running.pop()
        spans.append((started, time.monotonic()))
        outcome = "failed" if loaded else "passed"
        return TestRun(exit_code=0, seconds=0.3, report_found=True,
                       results={"t.py::fast": TestResult(outcome="passed"),
                                "t.py::timing": TestResult(outcome=outcome)})

    monkeypatch.setattr(suite, "suite_run", lambda *_args: suite.Ran(one_run()))
    monkeypatch.setattr(suite, "selection_run", lambda *_args: suite.Ran(one_run()))
    gold = gold_env([])
    suite.record_suite(object(), gold, ["t.py"], runs=3, timeout=60, reporter=Reporter())
    (_, first_end), *others = sorted(spans)
    assert all(start >= first_end for start, _ in others)  # the first alone: it names the selection
    (a_start, a_end), (b_start, b_end) = others
    assert a_start < b_end and b_start < a_end  # the last two at once
    assert gold.tests == ["t.py::fast"] and gold.flaky == ["t.py::timing"]
