"""The one runner of invert's attempts and rollout's tasks (``cligym.harness.workers``), with
no engine: items taken in order, the first error raised, and the stop on it."""

from __future__ import annotations

import threading

import pytest

from cligym.harness import workers
from cligym.harness.workers import run_workers


class _Engine:
    def __init__(self) -> None:
        self.removed: list[str] = []

    def remove_labelled_containers(self, *, mine: bool = False) -> None:
        self.removed.append("containers")

    def remove_scratch_images(self) -> None:
        self.removed.append("images")


def test_one_worker_runs_the_items_in_order_in_this_thread():
    done = []
    run_workers(lambda item: done.append((item, threading.current_thread())), range(3), 1, stop=lambda: None,
                runtime=_Engine(), name="t")
    assert done == [(item, threading.main_thread()) for item in range(3)]


def test_workers_run_items_at_once_and_take_them_in_order():
    together = threading.Barrier(3, timeout=10)
    started = []

    def work(item):
        started.append(item)
        if item < 3:
            together.wait()  # the first three run at once, or this times out

    run_workers(work, range(6), 3, stop=lambda: None, runtime=_Engine(), name="t")
    assert set(started[:3]) == {0, 1, 2} and sorted(started) == list(range(6))


def test_an_error_stops_the_running_items_drops_the_rest_and_is_raised():
    stop, engine, done = threading.Event(), _Engine(), []
    running = threading.Event()

    def work(item):
        if item == 0:
            running.wait(10)
            raise ValueError("boom")
        running.set()
        stop.wait(10)  # ends once told to stop
        done.append(item)

    with pytest.raises(ValueError, match="boom"):
        run_workers(work, range(10), 2, stop=stop.set, runtime=engine, name="t")
    assert stop.is_set() and done == [1] and engine.removed == []


def test_items_still_running_after_the_grace_lose_their_containers_then_their_images(monkeypatch):
    monkeypatch.setattr(workers, "STOP_WAIT", 0.1)
    engine, running, release = _Engine(), threading.Event(), threading.Event()

    def work(item):
        if item == 0:
            running.wait(10)
            raise ValueError("boom")
        running.set()
        release.wait(10)  # deaf to the stop: a command in progress

    try:
        with pytest.raises(ValueError):
            run_workers(work, range(3), 2, stop=lambda: None, runtime=engine, name="t")
        assert engine.removed == ["containers", "images"]
    finally:
        release.set()
