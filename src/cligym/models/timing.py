"""Where an attempt's time goes: one typed record of seconds per pipeline phase.

An attempt (``Candidate.seconds``), a run (``Summary.phase_seconds``) and a dataset
(``DatasetSummary.phase_seconds``) all carry a ``PhaseSeconds``; a phase is one of the
``Phase`` names, checked by the type checker wherever time is added.
"""

from __future__ import annotations

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
