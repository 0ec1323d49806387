"""What a degrader answers for one attempt (``Proposal``: plain data, no functions; it names
the degrader whose policy applies), the degrader's interface, which holds its policy
(what share of failing tests it takes, a solution derived from the filesystem), and the
repairs a proposal's state is proven with (``repairs``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from cligym.errors import CligymError
from cligym.harness.repair import repair_script
from cligym.invert.context import RunContext
from cligym.models.fs import LeakReport
from cligym.models.task import (
    AppliedChange,
    AttemptNotes,
    Candidate,
    RepairStep,
    TaskFields,
    plan_key,
)
from cligym.models.testrun import TestRun
from cligym.models.timing import PhaseSeconds
from cligym.verify.carried import CARRY_LIMIT, offline_fair


@dataclass(frozen=True)
class Change:
    """One change of a broken state (an operator, or a scenario's fault or blocker): what it
    is, its part of ΔD, the repair step that undoes it, and the sampled tests it touches."""

    applied: AppliedChange
    part: list[str]
    step: RepairStep
    touching: list[str] = field(default_factory=list)


@dataclass
class Proposal:
    """A degrader's answer for one attempt."""

    sample: list[str]  # the tests to run, in the order the suite runs them
    name: str = ""  # the instance id's middle part (operator names, or "agent")
    dockerfile: list[str] = field(default_factory=list)  # ΔD (default: the changes' parts)
    #: the repair script (default: the script of the changes' steps in ``order``); with
    #: ``derive_solution`` the degrader derives it from the filesystem difference to gold
    solution: str = ""
    derive_solution: bool = False
    discard: tuple[str, str] | None = None  # (kind, reason): the degrader gave up already
    #: the run the degrader made itself (its own container); the fresh build must reproduce it
    observed: TestRun | None = None
    #: ΔD must leave the gold's test files (and their cached bytecode) alone
    keep_tests: bool = False
    #: seconds the degrader spent, by phase (added to the attempt's)
    seconds: PhaseSeconds = field(default_factory=PhaseSeconds)
    #: what the degrader records on the attempt's Candidate (the fields it sets)
    notes: AttemptNotes = field(default_factory=AttemptNotes)
    #: the Task fields this degrader decides (the pipeline fills in the rest)
    task: TaskFields = field(default_factory=TaskFields)
    #: the changes, in the order ΔD applies them: minimality leaves each step out of the
    #: repair in turn
    changes: list[Change] = field(default_factory=list)
    #: the order the repair runs the steps in (indexes into ``changes``; default: last change first)
    repair_order: list[int] | None = None
    #: the obvious repair of the faults, which the blockers make fail (the blocker check)
    naive: list[RepairStep] = field(default_factory=list)
    #: may minimality check the same proposal with only its needed changes (``keep_only``)?
    reducible: bool = False
    #: the tests the degrader predicts to fail, run first (the screen)
    screen: list[str] = field(default_factory=list)
    #: may a screen miss be followed by another proposal within the same attempt?
    retry: bool = False
    #: the degrader whose policy applies to this proposal (None: the run's own)
    by: Degrader | None = None

    def __post_init__(self) -> None:
        if not self.dockerfile:
            self.dockerfile = [line for c in self.changes for line in c.part]
        if not self.solution and self.changes and not self.derive_solution:
            self.solution = repair_script(self.ordered_steps)

    @property
    def applied(self) -> list[AppliedChange]:
        return [c.applied for c in self.changes]

    @property
    def order(self) -> list[int]:
        """The repair's order of the changes (indexes)."""
        return self.repair_order if self.repair_order is not None else list(reversed(range(len(self.changes))))

    @property
    def ordered_steps(self) -> list[RepairStep]:
        return [self.changes[i].step for i in self.order]

    def keep_only(self, indexes: list[int]) -> Proposal:
        """The same proposal with only the changes at ``indexes`` (minimality's reduction of
        a state whose changes are independent, in their default order)."""
        changes = [self.changes[i] for i in indexes]
        applied = [c.applied for c in changes]
        return replace(self, name="+".join(a.name for a in applied), dockerfile=[], solution="", changes=changes,
                       screen=sorted({t for c in changes for t in c.touching}),
                       seconds=PhaseSeconds(), notes=AttemptNotes())


@dataclass(frozen=True)
class Try:
    """A proposal of the attempt under way that made no state taken (a miss), with the
    share of the sample its state failed when the policy refused it (None: nothing failed,
    or it did not build)."""

    proposal: Proposal
    fail_fraction: float | None = None
    #: the task-blind sweeper repaired its state while the run had its share of such
    swept: bool = False

    @property
    def entry(self) -> str:
        """How records name it (``Candidate.screened``): its pairs, else its name."""
        return plan_key([a.pair for a in self.proposal.applied]) or self.proposal.name


class Degrader:
    """Something that breaks a gold environment on purpose, one attempt at a time. The
    defaults: any state that fails something is taken, the task fields are the proposal's,
    and solutions are written, not derived."""

    #: prefix of every attempt's seed string (keeps the degraders' attempts apart)
    seed_prefix = "cligym"
    #: after how many attempts in a row that found nothing new to break the run stops
    #: (``parallel.exhausted``; 0: never — an agent's misses say nothing of the site)
    patience = 0

    def propose(self, ctx: RunContext, attempt: int, rng: random.Random, tries: list[Try]) -> Proposal:
        """The next proposal of ``attempt``; ``tries``: its earlier proposals that missed (the
        degrader's own ones), in order."""
        raise NotImplementedError

    def seen(self, candidate: Candidate) -> None:
        """Learn from a finished attempt (loaded from disk on a resumed run, or just made)."""

    def accept(self, proposal: Proposal, failing: list[str], late: bool) -> bool:
        """Does the degrader take a state that fails ``failing`` of the proposal's sample
        (``late``: is this one of the attempt's last tries)?"""
        return True

    def derived_solution(self, ctx: RunContext, report: LeakReport) -> str:
        """The repair script of a ``derive_solution`` proposal, from the filesystem
        difference to gold."""
        raise NotImplementedError(f"{type(self).__name__} writes its solutions")

    def stop_now(self) -> None:
        """The run is stopping: end the running attempts soon (a degrader that waits on a
        model)."""

    def undone(self, proposal: Proposal) -> bool:
        """Whether every change of ``proposal`` is one the task-blind sweeper undoes by its
        declaration (``Operator.undone_by``): a prediction, no measure."""
        return False


def repairs(ctx: RunContext, proposal: Proposal, policy: Degrader, measured: dict[str, tuple[bool, int]]
            ) -> tuple[str | Callable[[LeakReport], str], Callable[[LeakReport], str] | None]:
    """The repair to prove first, and the one to prove when it fails (None: none). A
    degrader that derives its repair from the filesystem difference (the agent path) and
    wrote one of its own (the agent's recovery) has its own tried first, refused untried
    when it carries more than ``CARRY_LIMIT`` bytes of gold (``offline_fair``, kept in
    ``measured`` by script), then the derived one."""
    if not proposal.derive_solution:
        return proposal.solution, None

    def derived(report: LeakReport) -> str:
        return policy.derived_solution(ctx, report)

    if not proposal.solution:
        return derived, None

    def own(report: LeakReport) -> str:
        paths = sorted({*report.added, *report.changed, *report.deleted})
        fair, carried = measured[proposal.solution] = offline_fair(proposal.solution, ctx.gold_session,
                                                                   ctx.probe.files, paths)
        if not fair:
            raise CligymError(f"the degrader's own repair carries {carried} bytes of gold files "
                              f"(at most {CARRY_LIMIT} may be)")
        return proposal.solution

    return own, derived
