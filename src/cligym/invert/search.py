"""Test-guided search with the built-in operators (the offline inversion, no LLM).

An attempt samples up to ``sample_size`` gold tests, then 1–3 operators with targets those
tests touch, and proposes their Dockerfile lines and repair script; the shared pipeline
(``cligym.invert.pipeline``) builds, screens, runs, checks minimality and verifies the
state. Every attempt leaves RUN_DIR/candidates/<id>.json; every verified one
RUN_DIR/tasks/<instance_id>/.

How targets are chosen (``Chooser``):

- what every operator targets is worked out once per run, on every gold test; an attempt
  keeps the targets its sample touches (so choosing costs little on large suites);
- narrow targets (touched by few of the sampled tests) weigh more, so most tasks leave
  much of the suite passing;
- the run learns: an operator weighs by its share of proposals that broke some test
  (screen misses and ``no_failure`` discards count against it) and by its share of tasks
  that left at least half of the sample passing (both Laplace-smoothed), and an
  (operator, target) pair that was tried is used again only when nothing untried is left;
- no operator makes more than ``max_share`` of a run's tasks while others can still be
  used, and a state failing more than half of its sample is taken only while such tasks
  stay within ``BROAD_SHARE`` of the run's (or in an attempt's last tries): the rest of the
  run looks for breakages of a part of the suite;
- in a composite proposal, each further target must touch tests the earlier ones do not,
  and not all of theirs, so that each operator can be necessary (minimality).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

from cligym.errors import BadInput
from cligym.invert.context import RunContext, open_run, sample_tests
from cligym.invert.operators import GoldFiles, Operator, Target, get, solution_script
from cligym.invert.operators.base import protected
from cligym.invert.pipeline import Proposal, run_attempts
from cligym.models.probe import Probe
from cligym.models.run import Summary
from cligym.models.task import AppliedOperator, Candidate
from cligym.runtime import Runtime
from cligym.ui import Reporter

#: How often 1, 2 or 3 operators are combined in one attempt.
OPERATOR_COUNT_WEIGHTS = {1: 6, 2: 3, 3: 1}
BROAD_WEIGHT = 0.15
#: The default largest share of a run's tasks one operator may make.
MAX_SHARE = 0.15
#: The largest share of a run's tasks that may fail more than half of their sample (a
#: state breaking more is taken only within it, or in an attempt's last tries).
BROAD_SHARE = 0.35
#: A task failing at most this share of its sample breaks a part of the suite.
PARTIAL = 0.5


def applicable(probe: Probe, operators: list[Operator], tests: list[str]) -> list[tuple[Operator, list[Target]]]:
    """Every operator with the targets the tests touch (protected libraries left out)."""
    options: list[tuple[Operator, list[Target]]] = []
    for op in operators:
        targets = [t for t in op.applies_to(probe, tests) if t.touching and not protected(t.path)]
        if targets:
            options.append((op, targets))
    return options


def restrict(options: list[tuple[Operator, list[Target]]], sample: list[str]) -> list[tuple[Operator, list[Target]]]:
    """The options with each target's touching tests cut to ``sample`` (targets no sampled
    test touches left out)."""
    keep = set(sample)
    out = []
    for op, targets in options:
        cut = [t.model_copy(update={"touching": [x for x in t.touching if x in keep]}) for t in targets]
        cut = [t for t in cut if t.touching]
        if cut:
            out.append((op, cut))
    return out


class Learnt:
    """What the run has learnt so far: which pairs were tried, how often each operator was
    proposed and broke something, and how many tasks each operator made."""

    def __init__(self) -> None:
        self.tried: set[str] = set()
        self.tries: Counter[str] = Counter()
        self.breaks: Counter[str] = Counter()
        self.made: Counter[str] = Counter()
        self.partial: Counter[str] = Counter()  # tasks that left at least half the sample passing
        self.tasks = 0  # the run's tasks, and how many of them were broad
        self.broad = 0

    def record(self, pairs: list[str], broke: bool) -> None:
        """Proposals of ``pairs`` ("operator|target") broke something, or did not."""
        self.tried.update(pairs)
        for pair in pairs:
            name = pair.split("|", 1)[0]
            self.tries[name] += 1
            self.breaks[name] += broke

    def seen(self, candidate: Candidate) -> None:
        """Learn from a finished attempt: its screen misses and minimality's decoys broke
        nothing; the operators of a verified task did, and made a task."""
        for entry in [*candidate.screened, *candidate.decoys]:
            self.record(entry.split(" + "), False)
        pairs = [f"{a.name}|{a.target}" for a in candidate.operators]
        if candidate.status == "verified":
            self.record(pairs, True)
            self.made.update(a.name for a in candidate.operators)
            self.tasks += 1
            if candidate.fail_fraction <= PARTIAL:
                self.partial.update(a.name for a in candidate.operators)
            else:
                self.broad += 1
        else:
            self.tried.update(pairs)

    def accept(self, fail_fraction: float, late: bool) -> bool:
        """Take a state failing ``fail_fraction`` of its sample? Always when it leaves at
        least half passing or the attempt is in its last tries; otherwise only while such
        broad tasks stay within ``BROAD_SHARE`` of the run's tasks."""
        return fail_fraction <= PARTIAL or late or self.broad + 1 <= BROAD_SHARE * (self.tasks + 1)

    def weight(self, op: Operator) -> float:
        """The operator's learnt break rate, times how often its tasks left most of the
        sample passing (both Laplace-smoothed), so that the run drifts to operators that
        break a part of the suite."""
        breaks = (self.breaks[op.name] + 1) / (self.tries[op.name] + 2)
        partial = (self.partial[op.name] + 1) / (self.made[op.name] + 2)
        return breaks * (0.25 + partial) * (BROAD_WEIGHT if op.broad else 1.0)


class Chooser:
    """Picks operators and prepared targets by what the run has learnt."""

    def __init__(self, files: GoldFiles, cap: int, learnt: Learnt) -> None:
        self.files = files
        self.cap = cap
        self.learnt = learnt
        self._prepared: dict[str, Target | None] = {}

    def choose(self, rng: random.Random, options, count: int, sample_size: int) -> list[tuple[Operator, Target]]:
        """``count`` operators with a prepared target each (fewer when fewer fit)."""
        under_cap = [(op, ts) for op, ts in options if self.learnt.made[op.name] < self.cap]
        pool = under_cap or options
        chosen = self._choose(random.Random(rng.random()), pool, count, sample_size, self.learnt.tried)
        return chosen or self._choose(rng, pool, count, sample_size, frozenset())

    def _choose(self, rng, options, count, sample_size, tried) -> list[tuple[Operator, Target]]:
        options = list(options)
        chosen: list[tuple[Operator, Target]] = []
        covered: set[str] = set()
        while options and len(chosen) < count:
            index = rng.choices(range(len(options)), weights=[self.learnt.weight(op) for op, _ in options])[0]
            op, targets = options.pop(index)
            if chosen and op.broad:
                continue  # a broad break hides everything else: keep it alone
            pool = [t for t in targets if f"{op.name}|{t.key}" not in tried and _adds(t, covered)][:50]
            picked = self._pick(rng, op, pool, sample_size, tried)
            if picked is not None:
                chosen.append((op, picked))
                covered |= set(picked.touching)
        return chosen

    def _pick(self, rng, op: Operator, pool: list[Target], sample_size: int, tried) -> Target | None:
        for _ in range(len(pool)):  # prepared targets are cached: trying them all is cheap
            pick = rng.choices(pool, weights=[_narrow(t, sample_size) for t in pool])[0]
            pool.remove(pick)
            prepared = self._prepare(op, pick)
            # prepare may choose the path (a definition's file): the pair is known by it
            if prepared is not None and f"{op.name}|{prepared.key}" not in tried:
                return prepared.model_copy(update={"touching": pick.touching})
        return None

    def _prepare(self, op: Operator, target: Target) -> Target | None:
        key = f"{op.name}|{target.key}|{target.name}|{target.data.model_dump_json()}"
        if key not in self._prepared:
            self._prepared[key] = op.prepare(target, self.files)
        return self._prepared[key]


def _adds(target: Target, covered: set[str]) -> bool:
    """A further target of a composite must touch a test the earlier ones do not, and
    must not touch all of theirs (else its breakage or theirs hides the other)."""
    if not covered:
        return True
    mine = set(target.touching)
    return bool(mine - covered) and not covered <= mine


def _narrow(target: Target, sample_size: int) -> float:
    """Narrow targets weigh more; one that most of the sample touches weighs little."""
    share = len(target.touching) / max(1, sample_size)
    return 1.0 / len(target.touching) * (1.0 if share <= 0.5 else 0.25)


class OperatorDegrader:
    """Proposes 1–3 built-in operators on targets the sampled tests touch."""

    seed_prefix = "cligym"

    def __init__(self, operators: list[Operator], max_operators: int, attempts: int = 30,
                 max_share: float = MAX_SHARE) -> None:
        self.operators = operators
        self.max_operators = max_operators
        self.cap = max(1, int(max_share * 0.9 * attempts))
        self.learnt = Learnt()
        self._all: list[tuple[Operator, list[Target]]] | None = None
        self.chooser: Chooser | None = None

    def seen(self, candidate: Candidate) -> None:
        self.learnt.seen(candidate)

    def missed(self, proposal: Proposal) -> None:
        """A screen miss within the attempt: its pairs are not tried again (``seen``
        counts them when the attempt ends)."""
        self.learnt.tried.update(f"{a.name}|{a.target}" for a in proposal.applied)

    def _chooser(self, ctx: RunContext) -> Chooser:
        if self.chooser is None:
            self.chooser = Chooser(GoldFiles.of_session(ctx.gold_session), self.cap, self.learnt)
            self._all = applicable(ctx.probe, self.operators, list(ctx.gold.tests))
        return self.chooser

    def propose(self, ctx: RunContext, attempt: int, rng: random.Random) -> Proposal:
        sample = sample_tests(rng, ctx.gold, ctx.sample_size)
        counts = [c for c in OPERATOR_COUNT_WEIGHTS if c <= self.max_operators]
        count = rng.choices(counts, weights=[OPERATOR_COUNT_WEIGHTS[c] for c in counts])[0]
        started = time.monotonic()
        chooser = self._chooser(ctx)
        pairs = chooser.choose(rng, restrict(self._all, sample), count, len(sample))
        pairs.sort(key=lambda pair: pair[0].order)
        seconds = {"choose": time.monotonic() - started}
        if not pairs:
            return Proposal(sample=sample, candidate={"seconds": seconds},
                            discard=("no_target", "no operator applies to the sample"))
        proposal = proposal_of(sample, pairs, self.learnt.accept)
        proposal.candidate["seconds"] = seconds
        return proposal


def proposal_of(sample: list[str], pairs: list[tuple[Operator, Target]], accept=None) -> Proposal:
    """The proposal of ``pairs`` (in order of application) on ``sample``; its smaller
    versions (``keep``) take states by the same ``accept``."""
    applied = [AppliedOperator(name=op.name, category=op.category, target=t.key, shows=list(op.shows),
                               offline=op.offline_repair(t), **op.describe(t)) for op, t in pairs]
    task = dict(operators=[a.name for a in applied], category=applied[0].category,
                categories=sorted({a.category for a in applied}), targets=[a.target for a in applied],
                symptoms=[a.symptom for a in applied], hints=[a.hint for a in applied])
    parts = [op.apply(t) for op, t in pairs]
    return Proposal(
        sample=sample, name="+".join(op.name for op, _ in pairs),
        dockerfile=[line for part in parts for line in part], solution=solution_script(pairs),
        task_fields=lambda verdict: task, applied=applied, parts=parts,
        keep=lambda indexes: proposal_of(sample, [pairs[i] for i in indexes], accept),
        screen=sorted({x for _, t in pairs for x in t.touching}), retry=True, accept=accept,
    )


def invert(
    gold_dir: Path,
    run_dir: Path,
    *,
    attempts: int,
    seed: int = 0,
    operators: list[str] | None = None,
    sample_size: int = 200,
    max_operators: int = 3,
    runtime: Runtime | None = None,
    reporter: Reporter | None = None,
) -> Summary:
    """Invert a gold environment with the built-in operators; returns the run's summary."""
    reporter = reporter or Reporter()
    if not 1 <= max_operators <= 3:
        raise BadInput("--max-operators must be 1, 2 or 3")
    try:
        ops = get(operators)
    except KeyError as exc:
        raise BadInput(f"unknown operator(s): {exc.args[0]} (see 'cligym operators')") from exc
    ctx = open_run(gold_dir, run_dir, runtime, reporter, attempts, seed=seed, operators=[o.name for o in ops],
                   sample_size=sample_size, max_operators=max_operators)
    with ctx.runtime.session(ctx.gold.image) as session, reporter.task(
        f"inverting {ctx.gold.source.spec}", total=attempts
    ):
        ctx.gold_session = session
        return run_attempts(ctx, OperatorDegrader(ops, max_operators, attempts), attempts)
