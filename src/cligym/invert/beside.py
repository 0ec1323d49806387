"""Two checks of one attempt at once, each in containers of its own, where the engine has a
core the run leaves idle (``RunContext.beside``), with the attempt's seconds kept as its wall
time: each second counted once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from cligym.harness.images import side_by_side
from cligym.models.timing import Phase, PhaseSeconds
from cligym.runtime import Runtime

A = TypeVar("A")
B = TypeVar("B")
T = TypeVar("T")


def beside(runtime: Runtime, seconds: PhaseSeconds, first: Callable[[], A], second: Callable[[PhaseSeconds], B],
           phase: Phase) -> tuple[A, B]:
    """``first()`` and, at the same time, ``second``: the seconds both take count for
    ``first``'s phases (it adds its own to ``seconds``), ``phase`` holds the wait ``second``
    adds after it (its own record of seconds is dropped)."""
    def ended(call: Callable[[], T]) -> Callable[[], tuple[T, float]]:
        return lambda: (call(), time.monotonic())

    (other, other_at), (mine, mine_at) = side_by_side(runtime, ended(lambda: second(PhaseSeconds())), ended(first))
    seconds.add(phase, max(0.0, other_at - mine_at))
    return mine, other
