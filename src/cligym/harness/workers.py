"""Work items run several at a time (for work that waits on a model server, which serves
many requests at once), and how such a run stops: the one runner of invert's attempts and
rollout's tasks."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from cligym.runtime import Runtime

T = TypeVar("T")

#: Seconds the running items get to end by themselves when the run stops.
STOP_WAIT = 3.0


def run_workers(work: Callable[[T], None], items: Iterable[T], workers: int, *, stop: Callable[[], None],
                runtime: Runtime, name: str) -> None:
    """``work`` of each item, in order: one worker runs them in this thread, more take them
    in order, ``workers`` at a time, in daemon threads. On an error there (the first is
    raised here) or a signal here, the items not started are dropped and the running ones
    stopped (``_stop``)."""
    if workers == 1:
        for item in items:
            work(item)
        return
    todo: queue.SimpleQueue[T] = queue.SimpleQueue()
    for item in items:
        todo.put(item)
    stopping = threading.Event()
    errors: list[BaseException] = []

    def loop() -> None:
        while not stopping.is_set():
            try:
                item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                work(item)
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                errors.append(exc)
                stopping.set()

    threads = [threading.Thread(target=loop, name=f"{name}-{n}", daemon=True) for n in range(workers)]
    for thread in threads:
        thread.start()
    try:
        while not errors and (alive := [thread for thread in threads if thread.is_alive()]):
            alive[0].join(0.2)
        if errors:
            raise errors[0]
    except BaseException:
        stopping.set()
        _stop(runtime, stop, threads)
        raise


def _stop(runtime: Runtime, stop: Callable[[], None], threads: list[threading.Thread]) -> None:
    """Stop the running items: ``stop()`` tells them to end before their next step (and the
    model's waits to end now). Those still running after ``STOP_WAIT`` (a command or a model
    answer in progress) lose their containers, and after as long again their scratch images
    (this process's only); the threads are daemons, so none keeps the process alive."""
    stop()
    if _joined(threads, STOP_WAIT):
        return
    runtime.remove_labelled_containers(mine=True)
    if not _joined(threads, STOP_WAIT):
        runtime.remove_scratch_images()


def _joined(threads: list[threading.Thread], seconds: float) -> bool:
    """Whether every thread ended within ``seconds``."""
    end = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, end - time.monotonic()))
    return not any(thread.is_alive() for thread in threads)
