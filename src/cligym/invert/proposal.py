"""What a degrader answers for one attempt (``Proposal``), and the degrader's interface."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from cligym.harness.repair import repair_script
from cligym.invert.context import RunContext
from cligym.models.fs import LeakReport
from cligym.models.task import AppliedOperator, Candidate, RepairStep
from cligym.models.testrun import TestRun
from cligym.models.verify import Verdict


@dataclass
class Proposal:
    """A degrader's answer for one attempt."""

    sample: list[str]  # the tests to run, in the order the suite runs them
    name: str = ""  # the instance id's middle part (operator names, or "agent")
    dockerfile: list[str] = field(default_factory=list)  # ΔD
    #: the repair script, or a function deriving it from the filesystem difference to gold
    #: (default: the script of ``steps`` in ``order``)
    solution: str | Callable[[LeakReport], str] = ""
    discard: tuple[str, str] | None = None  # (kind, reason): the degrader gave up already
    #: the run the degrader made itself (its own container); the fresh build must reproduce it
    observed: TestRun | None = None
    untouchable: Callable[[str], bool] | None = None  # paths ΔD must not change
    candidate: dict[str, Any] = field(default_factory=dict)  # extra Candidate fields
    #: the TaskInstance fields this degrader decides, given the verdict
    task_fields: Callable[[Verdict], dict[str, Any]] = lambda verdict: {}
    #: the changes (operators, or a scenario's faults and blockers), one ΔD part and one
    #: repair step each: minimality leaves each step out of the repair in turn
    applied: list[AppliedOperator] = field(default_factory=list)
    parts: list[list[str]] = field(default_factory=list)
    steps: list[RepairStep] = field(default_factory=list)
    #: the order the repair runs the steps in (indexes into ``steps``; default: last change first)
    repair_order: list[int] | None = None
    #: the obvious repair of the faults, which the blockers make fail (the blocker check)
    naive: list[RepairStep] = field(default_factory=list)
    #: the same proposal with only the parts at the given indexes (minimality's reduction)
    keep: Callable[[list[int]], Proposal] | None = None
    #: the tests the degrader predicts to fail, run first (the screen)
    screen: list[str] = field(default_factory=list)
    #: may a screen miss be followed by another proposal within the same attempt?
    retry: bool = False
    #: does the degrader take a state failing this fraction of the sample (the second
    #: argument: is this one of the attempt's last ``LATE_TRIES`` tries)? None: any state
    #: that fails something
    accept: Callable[[float, bool], bool] | None = None

    def __post_init__(self) -> None:
        if not self.solution and self.steps:
            self.solution = repair_script(self.ordered_steps)

    @property
    def order(self) -> list[int]:
        """The repair's order of the steps (indexes)."""
        return self.repair_order if self.repair_order is not None else list(reversed(range(len(self.steps))))

    @property
    def ordered_steps(self) -> list[RepairStep]:
        return [self.steps[i] for i in self.order]


class Degrader(Protocol):
    """Something that breaks a gold environment on purpose, one attempt at a time."""

    #: prefix of every attempt's seed string (keeps the two paths' attempts apart)
    seed_prefix: str

    def propose(self, ctx: RunContext, attempt: int, rng: random.Random) -> Proposal: ...

    def seen(self, candidate: Candidate) -> None:
        """Learn from a finished attempt (loaded from disk on a resumed run, or just made)."""

    def missed(self, proposal: Proposal, fail_fraction: float | None) -> None:
        """``proposal`` made no state worth checking; another one is asked for next.
        ``fail_fraction``: the share of the sample its state failed when ``accept`` refused
        it (None when nothing failed or it did not build)."""
