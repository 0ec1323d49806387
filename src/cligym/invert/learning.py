"""What an operator run learns from its own attempts (``Learnt``), and the shares it steers by.

Pairs are written "operator|target"; a proposal of several is "a|x + b|y". A pair that
broke some selected test is remembered with the share of the sample it failed: a state
refused as too broad, a task of it alone, or (a lower bound) the tests a composite task's
operator was necessary for. Those pairs are what an attempt falls back on when its own
guesses keep missing, and what composites are made of once single pairs run out.
"""

from __future__ import annotations

from collections import Counter

from cligym.models.task import Candidate, pair_operator, plan_key, plan_pairs

#: How much an operator that breaks the interpreter for every test weighs against others.
BROAD_WEIGHT = 0.15
#: The largest share of a run's tasks that may fail more than half of their sample (a
#: state breaking more is taken only within it, or in an attempt's last tries).
BROAD_SHARE = 0.35
#: A task failing at most this share of its sample breaks a part of the suite.
PARTIAL = 0.5


class Learnt:
    """What the run has learnt so far: which pairs were tried, how often each operator was
    proposed and broke something, how many tasks each operator made, and which pairs are
    known to break what share of a sample."""

    def __init__(self) -> None:
        self.tried: set[str] = set()
        self.tries: Counter[str] = Counter()
        self.breaks: Counter[str] = Counter()
        self.made: Counter[str] = Counter()
        self.partial: Counter[str] = Counter()  # tasks that left at least half the sample passing
        self.tasks = 0  # the run's tasks, and how many of them were broad
        self.broad = 0
        #: single pairs seen to break some selected test -> the share of the sample failed
        self.breaking: dict[str, float] = {}
        #: pairs of verified tasks -> the tests seen failing because of them (a single
        #: pair's FAIL_TO_PASS; a composite's operator: the tests only it was needed for)
        self.fails: dict[str, set[str]] = {}
        #: proposals that made a task (pairs joined by " + ", in order of application)
        self.used: set[str] = set()
        #: operators of states the task-blind sweeper repaired (every change of such a state
        #: is one it undoes): while the run has its share of such, they are not proposed
        self.swept: set[str] = set()

    def record(self, pairs: list[str], broke: bool) -> None:
        """Proposals of ``pairs`` broke something, or did not."""
        self.tried.update(pairs)
        for pair in pairs:
            name = pair_operator(pair)
            self.tries[name] += 1
            self.breaks[name] += broke

    def missed(self, pairs: list[str], fail_fraction: float | None, swept: bool = False) -> None:
        """Within an attempt: ``pairs`` made no state taken (``fail_fraction``: the share
        its state failed when it was refused as too broad; ``swept``: the sweeper repaired
        it). ``seen`` counts it later."""
        self.tried.update(pairs)
        if swept:
            self.swept.update(pair_operator(pair) for pair in pairs)
        if fail_fraction is not None and len(pairs) == 1:
            self.breaking[pairs[0]] = fail_fraction

    def seen(self, candidate: Candidate) -> None:
        """Learn from a finished attempt: its screen misses and minimality's decoys broke
        nothing, its refused states broke more than the run takes (they count against
        their operators' weight, and are remembered as breaking); the operators of a
        verified task broke something and made a task."""
        for entry in candidate.screened:  # a refused state broke too much: no success for the weights
            self.record(plan_pairs(entry), False)
            if entry in candidate.refused:
                self.missed(plan_pairs(entry), candidate.refused[entry])
        for entry in candidate.decoys:
            self.record(plan_pairs(entry), False)
        pairs = [a.pair for a in candidate.operators]
        if candidate.status != "verified":
            self.tried.update(pairs)
            if candidate.discard_kind == "sweeper_solves":
                self.swept.update(pair_operator(pair) for pair in pairs)
            return
        self.record(pairs, True)
        self.used.add(plan_key(pairs))
        self.made.update(a.name for a in candidate.operators)
        self.tasks += 1
        if candidate.fail_fraction <= PARTIAL:
            self.partial.update(a.name for a in candidate.operators)
        else:
            self.broad += 1
        size = max(1, len(candidate.sample))
        for pair, applied in zip(pairs, candidate.operators, strict=True):
            share = candidate.fail_fraction if len(pairs) == 1 else len(applied.fixes) / size
            if len(pairs) == 1 or (applied.necessary and pair not in self.breaking):
                self.breaking[pair] = share
                self.fails[pair] = set(candidate.FAIL_TO_PASS if len(pairs) == 1 else applied.fixes)

    def accept(self, fail_fraction: float, late: bool) -> bool:
        """Take a state failing ``fail_fraction`` of its sample? Always when it leaves at
        least half passing or the attempt is in its last tries; otherwise only while such
        broad tasks stay within ``BROAD_SHARE`` of the run's tasks."""
        return fail_fraction <= PARTIAL or late or self.broad + 1 <= BROAD_SHARE * (self.tasks + 1)

    def spare(self) -> list[str]:
        """Pairs known to break something that made no task alone, narrowest first."""
        return sorted((p for p in self.breaking if p not in self.used), key=lambda p: (self.breaking[p], p))

    def partial_pairs(self) -> list[str]:
        """Pairs known to break a part of a sample (at most ``PARTIAL``), narrowest first."""
        return sorted((p for p, s in self.breaking.items() if s <= PARTIAL), key=lambda p: (self.breaking[p], p))

    def weight(self, op) -> float:
        """An operator's learnt break rate, times how often its tasks left most of the
        sample passing (both Laplace-smoothed), so that the run drifts to operators that
        break a part of the suite."""
        breaks = (self.breaks[op.name] + 1) / (self.tries[op.name] + 2)
        partial = (self.partial[op.name] + 1) / (self.made[op.name] + 2)
        return breaks * (0.25 + partial) * (BROAD_WEIGHT if op.broad else 1.0)
