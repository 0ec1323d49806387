"""Test-guided search with the built-in operators (the offline inversion, no LLM).

An attempt samples up to ``sample_size`` gold tests, then 1–3 operators with targets those
tests touch, and proposes their Dockerfile lines and repair script; the shared pipeline
(``cligym.invert.pipeline``) builds, screens, runs, checks minimality and verifies the
state.

What every operator targets is worked out once per run, on every gold test; an attempt
keeps the targets its sample touches (so choosing costs little on large suites). The
``Chooser`` weighs operators by what the run learns (``cligym.invert.learning``), narrow
targets above broad ones, and never explores a tried (operator, target) pair again; no
operator makes more than ``MAX_SHARE`` of a run's tasks while others can still be used.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Set
from pathlib import Path

from cligym.errors import BadInput
from cligym.invert.debian_search import invert_debian
from cligym.invert.context import RunContext, open_run, sample_tests
from cligym.layout import GoldDir
from cligym.invert.scenario_search import SWEEPER_SHARE, MixedDegrader, ScenarioDegrader
from cligym.invert.learning import PARTIAL, Learnt
from cligym.invert.operators import GoldFiles, Operator, Target, get
from cligym.invert.operators.base import protected
from cligym.invert.parallel import run_attempts
from cligym.invert.pipeline import LATE_TRIES, MAX_TRIES
from cligym.invert.proposal import Change, Degrader, Proposal, Try
from cligym.invert.scenarios import get as get_scenarios
from cligym.models.probe import Probe
from cligym.models.run import Summary
from cligym.models.timing import PhaseSeconds
from cligym.models.task import (
    AppliedChange,
    Candidate,
    RepairStep,
    pair_key,
    pair_target,
    plan_key,
)
from cligym.runtime import Runtime
from cligym.ui import Reporter

#: How often 1, 2 or 3 operators are combined in one attempt.
OPERATOR_COUNT_WEIGHTS = {1: 6, 2: 3, 3: 1}
#: The default largest share of a run's tasks one operator may make.
MAX_SHARE = 0.15


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


Pairs = list[tuple[Operator, Target]]


class Chooser:
    """Picks operators and prepared targets by what the run has learnt: untried pairs
    first, and pairs known to break something when those miss or run out."""

    def __init__(self, files: GoldFiles, cap: int, learnt: Learnt,
                 options: Iterable[tuple[Operator, list[Target]]] = ()) -> None:
        self.files = files
        self.cap = cap
        self.learnt = learnt
        self.options: dict[str, list[tuple[Operator, Target]]] = {}  # "op|key" -> its targets, whole suite
        for op, targets in options:
            for target in targets:
                self.options.setdefault(pair_key(op.name, target.key), []).append((op, target))
        self._prepared: dict[str, Target | None] = {}
        self._known: dict[str, tuple[Operator, Target] | None] = {}  # prepared pairs by key
        #: operators not to propose now (``Learnt.swept`` while the run has its share of
        #: states the sweeper repairs: the degrader sets it at each proposal)
        self.avoid: Set[str] = frozenset()
        #: operators the sweeper undoes by their declaration (``Operator.undone_by``), set
        #: like ``avoid``: no proposal is made of these alone (the sweeper would repair it)
        self.undone: Set[str] = frozenset()

    def choose(self, rng, options, count: int, sample_size: int) -> Pairs:
        """``count`` untried operators with a prepared target each (fewer when fewer fit; not
        only operators the sweeper undoes, ``undone``).
        Targets most of the sample touches are not left out: touching is not breaking (a
        stale bytecode file of a module every test imports fails only the tests that call
        what changed), they only weigh less."""
        return self._choose(random.Random(rng.random()), self._under_cap(options), count, sample_size,
                            self.learnt.tried)

    def again(self, rng, options, count: int, sample_size: int) -> Pairs:
        """Like ``choose``, tried pairs included (when nothing else is left)."""
        return self._choose(rng, self._under_cap(options), count, sample_size, frozenset())

    def _under_cap(self, options):
        """The options whose operator is below its share cap (all of them when none is),
        less those it avoids."""
        options = [(op, ts) for op, ts in options if op.name not in self.avoid]
        return [(op, ts) for op, ts in options if self.learnt.made[op.name] < self.cap] or options

    def spare(self, sample: list[str], partial: bool) -> Pairs:
        """The narrowest pair known to break something that made no task alone (only those
        breaking at most ``PARTIAL`` of a sample when ``partial``)."""
        keep = set(sample)
        for pair in self.learnt.spare():
            if partial and self.learnt.breaking[pair] > PARTIAL:
                break
            found = self.known(pair, keep)
            if found is not None and not self.swept([found]):
                return [found]
        return []

    def combined(self, rng, sample: list[str], count: int) -> Pairs:
        """``count`` (at least two) pairs known to break a part of the suite, each failing
        (or, when not seen, touching) sampled tests the others do not, in a combination no
        task has yet."""
        keep = set(sample)
        found = []
        for pair in self.learnt.partial_pairs():
            if (known := self.known(pair, keep)) is not None:
                seen = [t for t in sample if t in self.learnt.fails.get(pair, ())]
                found.append((known[0], known[1].model_copy(update={"touching": seen})) if seen else known)
        for _ in range(5):
            rng.shuffle(found)
            chosen: Pairs = []
            covered: set[str] = set()
            for op, target in found:
                if len(chosen) < count and _adds(target, covered):
                    chosen.append((op, target))
                    covered |= set(target.touching)
            chosen.sort(key=lambda pair: pair[0].order)
            if len(chosen) >= 2 and not self.swept(chosen) and \
                    plan_key([pair_key(o.name, t.key) for o, t in chosen]) not in self.learnt.used:
                return chosen
        return []

    def known(self, pair: str, sample: set[str]) -> tuple[Operator, Target] | None:
        """The prepared pair of key ``pair`` with its touching cut to ``sample`` (None when
        it is not among this run's options, its operator is at its cap or avoided, or no
        sampled test touches it)."""
        if pair not in self._known:
            self._known[pair] = self._find(pair)
        found = self._known[pair]
        if found is None or self.learnt.made[found[0].name] >= self.cap or found[0].name in self.avoid:
            return None
        op, target = found
        touching = [t for t in target.touching if t in sample]
        return (op, target.model_copy(update={"touching": touching})) if touching else None

    def _find(self, pair: str) -> tuple[Operator, Target] | None:
        key = pair_target(pair)
        for op, target in self.options.get(pair, ()):
            if (prepared := self._prepare(op, target)) is not None and prepared.key == key:
                return op, prepared.model_copy(update={"touching": target.touching})
        return None

    def _choose(self, rng, options, count, sample_size, tried) -> Pairs:
        given = options = list(options)
        chosen: Pairs = []
        covered: set[str] = set()
        while options and len(chosen) < count:
            if len(chosen) == count - 1 and all(op.name in self.undone for op, _ in chosen):  # the last must resist
                options = [(op, ts) for op, ts in options if op.name not in self.undone]
                if not options:
                    break
            index = rng.choices(range(len(options)), weights=[self.learnt.weight(op) for op, _ in options])[0]
            op, targets = options.pop(index)
            if chosen and op.broad:
                continue  # a broad break hides everything else: keep it alone
            pool = [t for t in targets if pair_key(op.name, t.key) not in tried and _adds(t, covered)][:50]
            picked = self._pick(rng, op, pool, sample_size, tried)
            if picked is not None:
                chosen.append((op, picked))
                covered |= set(picked.touching)
        if self.swept(chosen):  # an undone first pick nothing resisting chains on: resisting ones only
            return self._choose(rng, [(op, ts) for op, ts in given if op.name not in self.undone], count,
                                sample_size, tried)
        return chosen

    def swept(self, pairs: Pairs) -> bool:
        """Whether ``pairs`` are some, and every operator of them one the sweeper undoes."""
        return bool(pairs) and all(op.name in self.undone for op, _ in pairs)

    def _pick(self, rng, op: Operator, pool: list[Target], sample_size: int, tried) -> Target | None:
        for _ in range(len(pool)):  # prepared targets are cached: trying them all is cheap
            pick = rng.choices(pool, weights=[_narrow(t, sample_size) for t in pool])[0]
            pool.remove(pick)
            prepared = self._prepare(op, pick)
            # prepare may choose the path (a definition's file): the pair is known by it
            if prepared is not None and pair_key(op.name, prepared.key) not in tried:
                whole = prepared.model_copy(update={"touching": self._whole(op, pick)})
                self._known.setdefault(pair_key(op.name, prepared.key), (op, whole))
                return prepared.model_copy(update={"touching": pick.touching})
        return None

    def _whole(self, op: Operator, target: Target) -> list[str]:
        """The tests of the whole suite that touch ``target`` (its sampled ones if unknown)."""
        known = self.options.get(pair_key(op.name, target.key))
        return known[0][1].touching if known else target.touching

    def _prepare(self, op: Operator, target: Target) -> Target | None:
        key = f"{op.name}|{target.key}|{target.name}|{target.data.model_dump_json()}"
        if key not in self._prepared:
            self._prepared[key] = op.prepare(target, self.files)
        return self._prepared[key]


def _adds(target: Target, covered: set[str]) -> bool:
    """A further target of a composite must touch a test the earlier ones touch: the
    changes chain on the same failing tests (repairing one reveals the next), and
    leave-one-repair-out keeps each only if its repair is needed."""
    return not covered or bool(set(target.touching) & covered)


def _share(target: Target, sample_size: int) -> float:
    return len(target.touching) / max(1, sample_size)


def _narrow(target: Target, sample_size: int) -> float:
    """Narrow targets weigh more; one that most of the sample touches weighs little."""
    return 1.0 / len(target.touching) * (1.0 if _share(target, sample_size) <= PARTIAL else 0.25)


class OperatorDegrader(Degrader):
    """Proposes 1–3 built-in operators on targets the sampled tests touch; takes a state by
    the share of the sample it fails (``Learnt.accept``: broad tasks fill their share)."""

    seed_prefix = "cligym"

    def __init__(self, operators: list[Operator], max_operators: int, attempts: int, min_operators: int = 1) -> None:
        self.operators = operators
        self.max_operators = max_operators
        self.min_operators = min(min_operators, max_operators)
        self.cap = max(1, int(MAX_SHARE * 0.9 * attempts))
        self.learnt = Learnt()
        #: the operators the sweeper undoes by their declaration (``Operator.undone_by``)
        self.declared_undone = frozenset(op.name for op in operators if op.undone_by)
        #: in the default mix, the scenarios' rule for a set of failing tests the run's tasks
        #: fail often enough (``ScenarioDegrader.held_back``): it holds for composites too
        self.held_back: Callable[[list[str]], bool] | None = None
        self._all: list[tuple[Operator, list[Target]]] | None = None
        self.chooser: Chooser | None = None

    def seen(self, candidate: Candidate) -> None:
        self.learnt.seen(candidate)

    def undone(self, proposal: Proposal) -> bool:
        return bool(proposal.changes) and all(c.applied.name in self.declared_undone for c in proposal.changes)

    def accept(self, proposal: Proposal, failing: list[str], late: bool) -> bool:
        if self.held_back is not None and self.held_back(failing):
            return False
        return self.learnt.accept(len(failing) / len(proposal.sample), late)

    def _chooser(self, ctx: RunContext) -> Chooser:
        if self.chooser is None:
            self._all = applicable(ctx.probe, self.operators, list(ctx.gold.tests))
            self.chooser = Chooser(GoldFiles.of_session(ctx.gold_session), self.cap, self.learnt, self._all)
        return self.chooser

    def propose(self, ctx: RunContext, attempt: int, rng: random.Random, tries: list[Try]) -> Proposal:
        """The attempt's misses so far (``tries``) are not tried again, and a refused state's
        pair is known to break (``seen`` counts them when the attempt ends)."""
        for missed in tries:
            self.learnt.missed([a.pair for a in missed.proposal.applied], missed.fail_fraction, missed.swept)
        sample = sample_tests(rng, ctx.gold, ctx.sample_size)
        full = ctx.sweeper_share_full()
        self._chooser(ctx).avoid = frozenset(self.learnt.swept) if full else frozenset()
        self._chooser(ctx).undone = self.declared_undone if full else frozenset()
        counts = [c for c in OPERATOR_COUNT_WEIGHTS if self.min_operators <= c <= self.max_operators]
        count = rng.choices(counts, weights=[OPERATOR_COUNT_WEIGHTS[c] for c in counts])[0]
        started = time.monotonic()
        pairs = self._pairs(self._chooser(ctx), rng, sample, count, len(tries))
        pairs.sort(key=lambda pair: pair[0].order)
        seconds = PhaseSeconds(choose=time.monotonic() - started)
        if not pairs:
            return Proposal(sample=sample, seconds=seconds, discard=("no_target", "no operator applies to the sample"))
        proposal = proposal_of(sample, pairs)
        proposal.seconds = seconds
        return proposal

    def _pairs(self, chooser: Chooser, rng: random.Random, sample: list[str], count: int, misses: int) -> Pairs:
        """An attempt's first tries explore untried pairs (narrow ones while broad tasks
        fill their share); its last tries (after ``misses`` of its own), and any try once
        untried pairs run out, take pairs known to break: a narrow one, a combination of
        narrow ones, a broad one."""
        options = restrict(self._all or [], sample)
        late, last = misses >= MAX_TRIES - LATE_TRIES, misses >= MAX_TRIES - 1
        full = not self.learnt.accept(1.0, False)  # broad tasks fill their share
        fresh = [] if late else chooser.choose(rng, options, count, len(sample))
        combine = max(2, min(count, self.max_operators)) if self.max_operators > 1 else 0
        pairs = fresh or chooser.spare(sample, partial=True) or chooser.combined(rng, sample, combine)
        if not pairs and late and not last:
            pairs = chooser.choose(rng, options, count, len(sample))
        pairs = pairs or chooser.spare(sample, partial=full and not late)
        if not pairs and late:
            pairs = chooser.choose(rng, options, count, len(sample))
        return pairs or chooser.again(rng, options, count, len(sample))


def proposal_of(sample: list[str], pairs: list[tuple[Operator, Target]]) -> Proposal:
    """The proposal of ``pairs`` (in order of application) on ``sample``; minimality may
    check it with only some of them (``Proposal.keep_only``)."""
    changes = [Change(AppliedChange.model_validate({
                          "name": op.name, "category": op.category, "target": t.key, "shows": list(op.shows),
                          "offline": op.offline_repair(t), "places": [t.path] if t.path else [], **op.describe(t)}),
                      op.apply(t), RepairStep(label=op.category, lines=op.solution(t)), list(t.touching))
               for op, t in pairs]
    return Proposal(sample=sample, name="+".join(op.name for op, _ in pairs), changes=changes, reducible=True,
                    retry=True,
                    screen=sorted({x for _, t in pairs for x in t.touching}))


def invert(
    gold_dir: Path,
    run_dir: Path,
    *,
    attempts: int,
    seed: int = 0,
    operators: list[str] | None = None,
    scenarios: list[str] | None = None,
    sample_size: int = 200,
    max_operators: int = 3,
    runtime: Runtime | None = None,
    reporter: Reporter | None = None,
    max_tasks: int | None = None,
    deadline: float | None = None,
    beside: bool | None = None,
) -> Summary:
    """Invert a gold environment without an LLM; returns the run's summary (``max_tasks``,
    ``deadline``: see ``run_attempts``). Named ``operators`` alone: 1–``max_operators``
    of them per attempt; named ``scenarios`` alone (``["all"]`` for every one): incident
    scenarios only; otherwise the default mix of scenarios and chained composites.
    ``beside``: measure each state's difficulty beside the verifier's checks
    (``RunContext.beside``); None: when the engine has a CPU beyond the one the run's single
    attempt at a time keeps busy (a caller running several runs at once says False)."""
    reporter = reporter or Reporter()
    if not 1 <= max_operators <= 3:
        raise BadInput("--max-operators must be 1, 2 or 3")
    if GoldDir(gold_dir).load().source.kind == "debian":
        if operators:
            raise BadInput("the built-in operators break Python environments; a Debian gold is broken by its "
                           "own scenarios (--scenarios, or neither option for all of them)")
        return invert_debian(gold_dir, run_dir, attempts=attempts, seed=seed, scenarios=scenarios,
                             sample_size=sample_size, runtime=runtime, reporter=reporter, max_tasks=max_tasks,
                             deadline=deadline)
    try:
        ops = get(operators)
        plans = get_scenarios(None if scenarios in (None, ["all"]) else scenarios)
    except KeyError as exc:
        raise BadInput(f"unknown operator or scenario name(s): {exc.args[0]} "
                       "(see 'cligym operators' and 'cligym scenarios')") from exc
    mix = "operators" if operators and not scenarios else "scenarios" if scenarios and not operators else "mixed"
    ctx = open_run(gold_dir, run_dir, runtime, reporter, attempts, seed=seed, operators=[o.name for o in ops],
                   scenarios=[p.name for p in plans] if mix != "operators" else [], mix=mix,
                   sample_size=sample_size, max_operators=max_operators)
    with ctx.runtime.session(ctx.gold.image) as session, reporter.task(
        f"inverting {ctx.gold.source.spec}", total=attempts
    ):
        ctx.gold_session = session
        # the degraders' shares are of the tasks the run makes: at most max_tasks of them
        tasks = min(attempts, max_tasks) if max_tasks else attempts
        # incidents and composites are meant to be hard: few of them a task-blind sweep repairs
        ctx.sweeper_share = SWEEPER_SHARE if mix != "operators" else None
        ctx.beside = ctx.runtime.capacity()[0] >= 2 if beside is None else beside
        return run_attempts(ctx, degrader(mix, ops, plans, max_operators, tasks, ctx.seed), attempts,
                            max_tasks=max_tasks, deadline=deadline)


def degrader(mix: str, ops: list[Operator], plans, max_operators: int, attempts: int, seed: int):
    """The degrader of a run: operators, scenarios, or the default mix (chained composites
    of at least two operators beside the scenarios)."""
    if mix == "operators":
        return OperatorDegrader(ops, max_operators, attempts)
    incidents = ScenarioDegrader(plans, attempts)
    if mix == "scenarios":
        return incidents
    composites = OperatorDegrader(ops, max(2, max_operators), attempts, min_operators=2)
    composites.held_back = incidents.held_back  # one rule for the run's symptoms, whoever proposes
    return MixedDegrader(incidents, composites, seed)
