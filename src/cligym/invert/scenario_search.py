"""Inversion by incident scenarios, and the default mix of scenarios and chained composites.

``ScenarioDegrader`` proposes one scenario's plan per try, drawn as ``_order`` tells. The
run's tasks spread over what the tests touch: a path earlier tasks broke, or one whose
tests the run's tasks already fail, is picked much less often; a plan predicted to fail a
set of tests that ``F2P_SHARE`` of the run's tasks already fail waits behind every other
scenario's plan, and once the run's tasks fail more than one set (the suite offers
another symptom) such a plan, or a state measured to fail such a set, is not taken at all
(a new symptom before an old one behind a new blocker). A state that breaks nothing is a
screen miss and the attempt draws again. Scenarios are never reduced: a plan with a
change that fails both leave-one-repair-out and the blocker check (an optional import
that hides a deleted module, say) is a miss too.

``MixedDegrader`` is the default: each attempt is a scenario or a chained composite of 2–3
built-in operators (``propose`` says who takes a turn the other cannot use). A family
that has made its share hands its turn to a composite: on a project whose tests reach
nothing but the interpreter, one family would otherwise make most of the tasks.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence, Set
from typing import Any, Protocol

from cligym.invert.context import RunContext, sample_tests
from cligym.invert.operators import GoldFiles
from cligym.invert.proposal import Change, Degrader, Proposal, Try
from cligym.invert.scenarios import Plan, Site
from cligym.models.task import AppliedChange, Candidate, TaskFields
from cligym.models.report import MIX_SHARE

#: The share of a default run's attempts that are scenarios (the rest: chained composites).
SCENARIO_SHARE = 0.9
#: The most of a run's tasks one scenario makes while others can still be used.
MAX_SHARE = 0.2
#: How much likelier a scenario that hides its cause is drawn before one that shows it.
HIDDEN_WEIGHT = 3.0
#: Plans of one scenario an attempt may see miss (break nothing, or fail a check) before it
#: tries another: a plan that deletes one function may pick one no sampled test calls.
MISSES_PER_SCENARIO = 3
#: The most of a run's tasks one scenario family (one mechanism) makes while others can.
FAMILY_SHARE = MIX_SHARE
#: The most of a run's tasks that fail one same set of tests while other sets can be had.
F2P_SHARE = 0.25
#: After how many attempts in a row that found nothing new to break (no target, a worn
#: symptom, no failing state) a scenario run stops: its site offers no more symptoms, and
#: the attempts left would be spent for nothing (``invert.parallel.exhausted``). Each such
#: attempt has tried up to ``MAX_TRIES`` states already; over eleven projects of a
#: paper-sized build, two in a row instead of three would have made 86 attempts instead of
#: 95 and lost one task of 67 (one project found a task after two such attempts).
PATIENCE = 2
#: The most of a run's tasks, at any moment, the task-blind sweeper repairs (a scenario or
#: default run: the pipeline discards a task that would raise the share above it,
#: ``sweeper_solves``; so a run's share, and a dataset's, stays at most this).
SWEEPER_SHARE = 0.1


def share_cap(share: float, attempts: int) -> int:
    """How many of ``attempts`` tasks ``share`` allows (at least 1)."""
    return max(1, int(share * attempts))


class Planner(Protocol):
    """What the scenario degrader draws from: a scenario of either world (``Scenario``, or
    the Debian world's ``DebianScenario``)."""

    @property
    def name(self) -> str: ...

    @property
    def family(self) -> str: ...

    @property
    def shows_cause(self) -> bool: ...

    @property
    def resists_sweeper(self) -> bool: ...

    def plan(self, site: Any, rng: random.Random) -> Plan | None: ...


def proposal_of_plan(sample: list[str], plan: Plan, family: str) -> Proposal:
    changes = [Change(AppliedChange(name=c.name, category=c.category, target=(c.places or [c.name])[0],
                                      symptom=c.symptom, hint=c.hint, shows=c.shows, offline=c.offline, role=c.role,
                                      places=c.places), c.dockerfile, c.step) for c in plan.changes]
    return Proposal(
        sample=sample, name=plan.scenario, changes=changes, repair_order=plan.repair_order, naive=plan.naive,
        task=TaskFields(scenario=plan.scenario, family=family),
        screen=[t for t in sample if t in set(plan.touching)], retry=True,
    )


class ScenarioDegrader(Degrader):
    """Proposes one incident scenario's plan per try."""

    seed_prefix = "cligym-scenario"
    patience = PATIENCE
    #: whether a plan's predicted failing tests are the ones its state fails, near enough
    #: for a plan predicted to fail a worn set to be refused untried (the Python site's: a
    #: test's own imports); otherwise such a plan is tried last and its measured set decides
    predicts_exactly = True

    def __init__(self, scenarios: Sequence[Planner], attempts: int) -> None:
        self.scenarios = scenarios
        self.cap = max(2, int(MAX_SHARE * attempts + 0.5))
        self.family_cap = share_cap(FAMILY_SHARE, attempts)
        self.f2p_cap = share_cap(F2P_SHARE, attempts)
        self.made: Counter[str] = Counter()
        self.families: Counter[str] = Counter()
        self.failing: Counter[frozenset[str]] = Counter()  # the F2P sets of the run's tasks
        self.broken: Counter[str] = Counter()  # paths the faults of the run's tasks broke
        #: paths whose fault alone the task-blind sweeper undid in an attempt of the run: a
        #: planner it undoes draws them no more (the same state would be swept again)
        self.swept: set[str] = set()
        #: scenarios a state of which the sweeper undid in an attempt of the run: while the
        #: run has its share of such, they are not drawn (one that makes new paths each time,
        #: a ghost plugin's metadata, escapes ``swept``)
        self.swept_scenarios: set[str] = set()
        self.files: GoldFiles | None = None
        #: per attempt under way, the scenarios that had no target in one of its samples
        self._untargeted: dict[int, set[str]] = {}

    def seen(self, candidate: Candidate) -> None:
        """Learn from every task of the run (scenario or not): what it is, what it fails, what it broke."""
        self._untargeted.pop(candidate.attempt, None)
        if candidate.discard_kind == "sweeper_solves":
            self.learn_swept(candidate.operators)
        if candidate.status != "verified" or not candidate.instance_id:
            return
        name = candidate.instance_id.split(".")[-2]
        self.made[name] += 1
        family = next((s.family for s in self.scenarios if s.name == name), None)
        if family:
            self.families[family] += 1
        self.failing[frozenset(candidate.FAIL_TO_PASS)] += 1
        for change in candidate.operators:
            if change.role == "fault":
                self.broken.update(set(change.places))

    def learn_swept(self, changes: Sequence[AppliedChange]) -> None:
        """The paths of the faults of a state the task-blind sweeper undid: drawn no more."""
        self.swept.update(p for change in changes if change.role == "fault" for p in change.places)

    def worn(self, touching: list[str]) -> bool:
        """Whether a plan predicted to fail ``touching`` would fail a set of tests the run's
        tasks already fail as often as ``F2P_SHARE`` allows."""
        return self.failing[frozenset(touching)] >= self.f2p_cap

    def held_back(self, failing: list[str]) -> bool:
        """Whether a task failing ``failing`` is not made: its set is worn while the run's
        tasks fail another set too (the suite offers more than one symptom). A suite whose
        every task fails one same set (tests that import the project from the working
        tree: every fault fails them all) keeps making tasks of it."""
        return self.worn(failing) and len(self.failing) > 1

    def accept(self, proposal: Proposal, failing: list[str], late: bool) -> bool:
        return not self.held_back(failing)

    def _order(self, rng: random.Random, misses: Counter[str] | None = None,
               out: Set[str] = frozenset()) -> list[Planner]:
        """The scenarios still in the attempt's draw in a random order — none of a family
        that has made its share of the run's tasks (``FAMILY_SHARE``), none whose plans
        missed ``MISSES_PER_SCENARIO`` times in the attempt (``misses``), none in ``out``
        (no target in the attempt's samples) —: the ones under their own cap first, of those
        the ones a sweeper cannot undo first (the others are the fallback); within a tier a
        weighted draw without replacement, where a scenario that hides its cause weighs
        ``HIDDEN_WEIGHT`` times one whose mechanism shows an injected path (a traceback that
        names the culprit makes an easy task)."""
        misses = misses or Counter()
        pool = [s for s in self.scenarios if misses[s.name] < MISSES_PER_SCENARIO and s.name not in out
                and self.families[s.family] < self.family_cap]
        keys = [(self.made[s.name] >= self.cap, not s.resists_sweeper,
                 -rng.random() ** (1.0 / (1.0 if s.shows_cause else HIDDEN_WEIGHT))) for s in pool]
        return [s for _, s in sorted(zip(keys, pool, strict=True), key=lambda pair: pair[0])]

    def site(self, ctx: RunContext, sample: list[str], tries: list[Try]) -> Any:
        """What the scenarios choose their targets from, for ``sample`` and after the
        attempt's ``tries`` (a ``Site``; the Debian world's degrader gives its own kind, which
        its planners take)."""
        if self.files is None:
            self.files = GoldFiles.of_session(ctx.gold_session)
        site = Site(ctx.probe, sample, self.files)
        site.used, site.failing = dict(self.broken), self.failing  # spread over what earlier tasks did not touch
        return site

    def propose(self, ctx: RunContext, attempt: int, rng: random.Random, tries: list[Try]) -> Proposal:
        misses = Counter(t.proposal.name for t in tries)
        for swept in (t for t in tries if t.swept):  # as ``seen`` learns from a swept attempt
            self.learn_swept([c.applied for c in swept.proposal.changes])
            self.swept_scenarios.add(swept.proposal.name)
        untargeted = self._untargeted.setdefault(attempt, set())
        out = untargeted | self.swept_scenarios if ctx.sweeper_share_full() else untargeted
        sample = sample_tests(rng, ctx.gold, ctx.sample_size)
        site = self.site(ctx, sample, tries)
        worn: Plan | None = None  # the first plan whose failing set is worn: taken only if no other comes
        family = {s.name: s.family for s in self.scenarios}
        for scenario in self._order(rng, misses, out):
            site.narrow = misses[scenario.name] < MISSES_PER_SCENARIO - 1  # its last try: whole modules
            site.avoid = frozenset() if scenario.resists_sweeper else self.swept
            plan = scenario.plan(site, random.Random(rng.random()))
            if plan is not None and plan.touching and not self.worn(plan.touching):
                return proposal_of_plan(sample, plan, scenario.family)
            if plan is not None and plan.touching:
                worn = worn or plan
                continue
            untargeted.add(scenario.name)  # no target in this sample: out of the attempt's draw
        if worn is not None and (not self.predicts_exactly or not self.held_back(worn.touching)):
            return proposal_of_plan(sample, worn, family[worn.scenario])
        if worn is not None:
            return Proposal(sample=sample, discard=("worn_symptom", "every plan with a target in the sample fails a "
                                                                    "set of tests the run's tasks already fail as "
                                                                    f"often as {F2P_SHARE:.0%} of them may, and they "
                                                                    "fail other sets too"))
        return Proposal(sample=sample, discard=("no_target", "no scenario of a family under its share has a target "
                                                             "in the sample"))


class MixedDegrader(Degrader):
    """Scenarios for most attempts, chained operator composites for the rest; the policy of
    the one that made a proposal applies to it (``Proposal.by``)."""

    seed_prefix = "cligym-mix"
    patience = PATIENCE

    def __init__(self, scenarios: ScenarioDegrader, composites: Degrader, seed: int) -> None:
        self.scenarios, self.composites, self.seed = scenarios, composites, seed

    def of(self, attempt: int) -> Degrader:
        """Who makes ``attempt``: decided by the run's seed and the attempt number alone."""
        draw = random.Random(f"{self.seed_prefix}:{self.seed}:{attempt}").random()
        return self.scenarios if draw < SCENARIO_SHARE else self.composites

    def propose(self, ctx: RunContext, attempt: int, rng: random.Random, tries: list[Try]) -> Proposal:
        """The attempt's degrader proposes (told of its own tries). A composite turn whose
        search can only offer a single operator goes to a scenario; a scenario turn no
        scenario has a target for goes to a composite; when neither has one, the operator
        search's own proposal (a single fault) is taken rather than none."""
        first = self.of(attempt)
        fallback: Proposal | None = None
        for degrader in (first, self.composites if first is self.scenarios else self.scenarios):
            proposal = degrader.propose(ctx, attempt, rng, [t for t in tries if t.proposal.by is degrader])
            proposal.by = degrader
            if proposal.discard is None and (degrader is self.scenarios or len(proposal.changes) >= 2):
                return proposal
            if degrader is self.composites and proposal.discard is None:
                fallback = proposal
        return fallback if fallback is not None else proposal

    def seen(self, candidate: Candidate) -> None:
        # both learn from every attempt: each counts only what it made
        self.scenarios.seen(candidate)
        self.composites.seen(candidate)
