"""Where an attempt's time goes: one typed record of seconds per pipeline phase.

An attempt (``Candidate.seconds``), a run (``Summary.phase_seconds``) and a dataset
(``DatasetSummary.phase_seconds``) all carry a ``PhaseSeconds``; a phase is one of the
``Phase`` names, checked by the type checker wherever time is added.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

#: The phases of an attempt, in pipeline order (``cligym.invert.pipeline``).
Phase = Literal[
    "choose", "query", "agent", "recovery",  # the degrader proposes a state
    "build", "screen", "run", "rerun",  # gold + ΔD built, its tests run
    "minimal", "blocker",  # every change needed, every blocker blocks
    "repeat", "leak_scan", "verifier", "flaky",  # the state holds as a task
    "difficulty",  # how hard it is
]

#: What each phase does, for the report and ``--help`` texts.
PHASE_TEXT: dict[str, str] = {
    "choose": "the operator search picks a plan (no container)",
    "query": "the model writes a degradation query",
    "agent": "the degrading agent works in its container",
    "recovery": "the agent is asked for its own repair",
    "build": "gold + ΔD is built",
    "screen": "the tests predicted to fail run first",
    "run": "the selected tests run in the broken state",
    "rerun": "the agent's state is rebuilt and its tests run again",
    "minimal": "leave-one-repair-out runs",
    "blocker": "the blocker check's runs",
    "repeat": "a repeat run with nothing done",
    "leak_scan": "the broken image is compared with gold",
    "verifier": "the repair and the task's verifier, with nothing done and after it",
    "flaky": "gold runs of the tests a repair left failing",
    "difficulty": "the reveal rounds and the task-blind sweeper",
}


class PhaseSeconds(BaseModel):
    """Seconds spent per phase (``Phase``); a phase never entered stays 0."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    choose: float = 0.0
    query: float = 0.0
    agent: float = 0.0
    recovery: float = 0.0
    build: float = 0.0
    screen: float = 0.0
    run: float = 0.0
    rerun: float = 0.0
    minimal: float = 0.0
    blocker: float = 0.0
    repeat: float = 0.0
    leak_scan: float = 0.0
    verifier: float = 0.0
    flaky: float = 0.0
    difficulty: float = 0.0

    @model_serializer(mode="wrap")
    def _entered_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, float]:
        """Records hold the phases entered only (a phase left out reads as 0)."""
        return {phase: seconds for phase, seconds in handler(self).items() if seconds}

    def add(self, phase: Phase, seconds: float) -> None:
        setattr(self, phase, getattr(self, phase) + seconds)

    @contextmanager
    def timing(self, phase: Phase) -> Iterator[None]:
        """Add the seconds the ``with`` block takes to ``phase`` (also when it raises)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.add(phase, time.monotonic() - started)

    def absorb(self, other: PhaseSeconds) -> None:
        """Add every phase of ``other`` to this one."""
        for phase in PHASES:
            self.add(phase, getattr(other, phase))

    @classmethod
    def summed(cls, parts: list[PhaseSeconds]) -> PhaseSeconds:
        total = cls()
        for part in parts:
            total.absorb(part)
        return total

    def total(self) -> float:
        return sum(getattr(self, phase) for phase in PHASES)

    def spent(self) -> dict[Phase, float]:
        """The phases entered, in pipeline order (for tables and charts)."""
        return {phase: getattr(self, phase) for phase in PHASES if getattr(self, phase)}

    def rounded(self, digits: int = 2) -> PhaseSeconds:
        return PhaseSeconds(**{phase: round(getattr(self, phase), digits) for phase in PHASES})

    def per(self, count: int) -> PhaseSeconds:
        """Each phase divided by ``count`` (seconds per task, say)."""
        return PhaseSeconds(**{phase: getattr(self, phase) / count for phase in PHASES}) if count else PhaseSeconds()


PHASES: tuple[Phase, ...] = get_args(Phase)
