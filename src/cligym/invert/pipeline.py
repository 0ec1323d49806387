"""The attempt pipeline both degraders share.

A ``Degrader`` proposes a broken state for one attempt (``propose``): the Dockerfile delta
ΔD, the tests to run, how to repair it, and what the task record should say. Everything
after that is the same whoever proposed it, and lives here once:

1. the delta's digest names the task; a task of another attempt with the same delta makes
   this one a duplicate (a degrader that may try again proposes another);
2. gold + ΔD is built from scratch (no layer cache);
3. the screen: the tests the degrader predicts to fail run first; when none fails (or ΔD
   did not build, or the full run below fails a share of the sample the degrader does not
   ``accept``), a degrader that may (``retry``) proposes again within the attempt, up to
   ``MAX_TRIES`` proposals, and the misses are recorded (``Candidate.screened``; the
   refused shares in ``Candidate.refused``) for it to learn from;
4. the selected tests run in a fresh container of it. When the degrader saw the tests fail
   itself (the agent, in its own container), the fresh run must fail exactly the same set
   (``reproduced``); otherwise this run decides FAIL_TO_PASS and PASS_TO_PASS;
5. minimality (``cligym.invert.minimal``): a state of several changes keeps only the
   changes whose repair step is needed — the full repair without it leaves some F2P test
   failing (leave-one-repair-out: chained faults stay) — and the blockers that pass the
   blocker check; with decoys dropped the smaller state goes through the pipeline again
   from step 1 (a proposal that cannot be reduced is a miss: the degrader proposes
   another when it may, else the attempt is discarded);
6. ``cligym.verify.check_broken_state``: a repeat run, the leak scan, no untouchable path
   changed, and the solution makes every selected test pass;
7. the difficulty is measured (``cligym.verify.difficulty``: k, reveal depth, culprit
   named, the sweeper, breadth, a label), then the TaskInstance and its issue texts are saved (a text ``check_issues`` refuses
   discards the attempt), then the Candidate; the broken image is removed whatever
   happened.

Each attempt is seeded by (the degrader's seed prefix, the run's seed, the attempt number)
alone, so a run is reproducible and a resumed run makes the same attempts.
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import dataclass

from cligym.errors import BuildFailed, CligymError
from cligym.harness.images import broken_tag, build_broken, delta_digest, extra_bytes
from cligym.harness.testrun import hang_timeout, run_tests
from cligym.invert import minimal
from cligym.invert.context import RunContext, classify, error_excerpts
from cligym.invert.dockerfile import touches_tests
from cligym.invert.proposal import Degrader, Proposal
from cligym.issue import check_issues, write_issues
from cligym.models.fs import LeakReport
from cligym.models.io import load, save
from cligym.models.task import Candidate, TaskInstance, plan_key
from cligym.models.testrun import TestRun
from cligym.verify import check_broken_state
from cligym.verify.difficulty import measure

#: A discarded attempt keeps its derived solution (for a look) only up to this size.
KEEP_SOLUTION_BYTES = 256 * 1024


def forget_orphans(ctx: RunContext) -> None:
    """Remove the task records whose attempt has no candidate record: an interrupted try
    saved the task just before its candidate, and a redo that makes another delta (a model
    seldom makes the same one twice) would leave it behind, uncounted."""
    for record in ctx.run.instances():
        try:
            task = load(TaskInstance, record)
        except CligymError:
            continue
        if not ctx.run.candidate(task.attempt).exists():
            shutil.rmtree(record.parent, ignore_errors=True)


#: How many proposals one attempt may build when the screen finds no failure, and how many
#: of the last ones take any state that fails something (``Degrader.accept``'s ``late``).
MAX_TRIES = 8
LATE_TRIES = 3


class _Attempt:
    """One attempt's Candidate, filled in as the attempt goes (``record``); its seconds and
    the lists the attempt's tries add to are taken when it ends."""

    def __init__(self, ctx: RunContext, degrader: Degrader, attempt: int, proposal: Proposal,
                 seconds: dict[str, float], screened: list[str], decoys: list[str], refused: dict[str, float]) -> None:
        self.ctx, self.degrader, self.proposal = ctx, degrader, proposal
        self.late = len(screened) >= MAX_TRIES - LATE_TRIES
        self.seconds, self.screened, self.decoys, self.refused = seconds, screened, decoys, refused
        self.record = Candidate(id=f"{attempt:04d}", attempt=attempt, seed=ctx.seed, status="discarded",
                                sample=proposal.sample, dockerfile=proposal.dockerfile)
        for name in proposal.notes.model_fields_set:
            setattr(self.record, name, getattr(proposal.notes, name))
        if proposal.applied:
            self.record.operators = proposal.applied
        if proposal.solution:
            self.record.solution = proposal.solution

    def _ended(self, **status) -> Candidate:
        return self.record.model_copy(update=dict(seconds=dict(self.seconds), screened=list(self.screened),
                                                  decoys=list(self.decoys), refused=dict(self.refused), **status))

    def discarded(self, kind: str, reason: str) -> Candidate:
        return self._ended(status="discarded", discard_kind=kind, reason=reason[:500])

    def verified(self, instance_id: str) -> Candidate:
        return self._ended(status="verified", instance_id=instance_id)


@dataclass
class Miss:
    """The proposal made no state worth checking (nothing failed, ΔD did not build, an
    earlier task has the same ΔD, or the degrader does not accept the share that failed,
    ``fail_fraction``): the attempt may try another proposal."""

    fail_fraction: float | None = None


@dataclass
class Reduced:
    """Minimality dropped decoy changes: the smaller state is checked from the start."""

    proposal: Proposal
    decoys: list[str]


#: What checking one proposal comes to: a finished attempt, a miss, or a smaller state.
Outcome = Candidate | Miss | Reduced


def _no_state(screened: list[str], refused: dict[str, float]) -> str:
    if not refused:
        return f"no selected test failed in {len(screened)} tries"
    return (f"no state taken in {len(screened)} tries ({len(refused)} failed more of the sample "
            "than the run still takes)")


def make_attempt(ctx: RunContext, degrader: Degrader, attempt: int) -> Candidate:
    rng = random.Random(f"{degrader.seed_prefix}:{ctx.seed}:{attempt}")
    seconds: dict[str, float] = {}
    screened: list[str] = []
    decoys: list[str] = []
    refused: dict[str, float] = {}
    proposal = degrader.propose(ctx, attempt, rng)
    for _ in range(3 * MAX_TRIES):  # the tries, each with up to two minimality reductions
        seconds.update({k: seconds.get(k, 0.0) + v for k, v in proposal.seconds.items()})
        state = _Attempt(ctx, degrader, attempt, proposal, seconds, screened, decoys, refused)
        if proposal.discard is not None:
            return state.discarded(*proposal.discard)
        outcome = _attempt_state(state)
        if isinstance(outcome, Candidate):
            return outcome
        if isinstance(outcome, Reduced):
            decoys.extend(outcome.decoys)
            proposal = outcome.proposal
            continue
        entry = plan_key([a.pair for a in proposal.applied]) or proposal.name
        screened.append(entry)
        if outcome.fail_fraction is not None:
            refused[entry] = outcome.fail_fraction
        if not proposal.retry or len(screened) >= MAX_TRIES:
            return state.discarded("no_failure", _no_state(screened, refused))
        degrader.missed(proposal, outcome.fail_fraction)
        proposal = degrader.propose(ctx, attempt, rng)
    return state.discarded("error", "too many proposals in one attempt")


def _attempt_state(state: _Attempt) -> Outcome:
    ctx, proposal = state.ctx, state.proposal
    if proposal.observed is not None:
        _classify(state, proposal.observed)
    gold, attempt = ctx.gold, state.record.attempt
    digest = delta_digest(gold, proposal.dockerfile)
    if ctx.order is not None:  # attempts at once: check as one at a time would
        ctx.order.claim(digest, attempt)
    try:
        return _check_new(state, digest)
    finally:
        if ctx.order is not None:
            ctx.order.release(digest, attempt)


def _check_new(state: _Attempt, digest: str) -> Outcome:
    """``_check`` unless an earlier attempt made a task of the same delta."""
    ctx, proposal = state.ctx, state.proposal
    instance_id = f"{ctx.gold.source.name}.{proposal.name}.{digest}"
    if ctx.run.instance(instance_id).exists() and load(TaskInstance, ctx.run.instance(instance_id)).attempt != state.record.attempt:
        if proposal.retry:
            return Miss()  # nothing new to learn from building it again: try another
        return state.discarded("duplicate", "the same delta as an earlier attempt")
    tag = broken_tag(ctx.gold, digest)
    try:
        return _check(state, tag, instance_id)
    except CligymError as exc:
        if getattr(exc, "fatal", False):
            raise  # the engine is gone: stop the run, the attempt is redone on resume
        return state.discarded("error", str(exc))
    finally:
        ctx.runtime.remove_image(tag)


def _classify(state: _Attempt, run: TestRun) -> list[str]:
    sample = state.proposal.sample
    f2p, p2p = classify(run, sample)
    record = state.record
    record.FAIL_TO_PASS, record.PASS_TO_PASS, record.fail_fraction = f2p, p2p, round(len(f2p) / len(sample), 4)
    return f2p


def _timed(seconds: dict[str, float], key: str, started: float) -> None:
    seconds[key] = seconds.get(key, 0.0) + time.monotonic() - started


def _check(state: _Attempt, tag: str, instance_id: str) -> Outcome:
    """Build gold + ΔD, screen and run the sample, check minimality and the broken state,
    save the task."""
    ctx, proposal, seconds = state.ctx, state.proposal, state.seconds
    gold = ctx.gold
    started = time.monotonic()
    try:
        build_broken(ctx.runtime, gold, proposal.dockerfile, tag)
    except BuildFailed as exc:
        if proposal.observed is not None:
            state.record.reproduced = False
        elif proposal.retry:
            _timed(seconds, "build", started)
            return Miss()  # a state that cannot be made breaks nothing: try another
        return state.discarded("build_failed", str(exc))
    _timed(seconds, "build", started)
    started = time.monotonic()
    predicted = set(proposal.screen)
    screen = [t for t in proposal.sample if t in predicted]
    limit = hang_timeout(gold.test_seconds)
    if screen and len(screen) < len(proposal.sample):
        screened = run_tests(ctx.runtime, tag, gold.workdir, gold.test_command, screen, timeout=limit)
        if screened.timed_out or not classify(screened, screen)[0]:
            _timed(seconds, "screen", started)
            return Miss()  # a hung state makes no task either
        _timed(seconds, "screen", started)
        started = time.monotonic()
    fresh = run_tests(ctx.runtime, tag, gold.workdir, gold.test_command, proposal.sample, timeout=limit)
    if fresh.timed_out:
        _timed(seconds, "run", started)
        if proposal.observed is None:
            return Miss()
        return state.discarded("not_reproducible", f"the sample's run hung (over {limit:.0f} s)")
    if proposal.observed is None:
        _timed(seconds, "run", started)
        if not _classify(state, fresh):
            return Miss()
        if not state.degrader.accept(proposal, state.record.fail_fraction, state.late):
            return Miss(state.record.fail_fraction)  # the degrader wants another share broken
    else:
        _timed(seconds, "rerun", started)
        reason = _not_reproduced(classify(fresh, proposal.sample)[0], state.record.FAIL_TO_PASS)
        state.record.reproduced = not reason
        if reason:
            return state.discarded("not_reproducible", reason)
    reduced = _minimal(state, tag)
    if reduced is not None:
        return reduced
    return _verify_and_save(state, tag, instance_id, proposal.observed or fresh)


def _minimal(state: _Attempt, tag: str) -> Outcome | None:
    """Record each change's evidence (leave-one-repair-out, and the blocker check for
    blockers); None when every change is necessary or blocking, else the smaller state
    (``Reduced``), a ``Miss`` (a degrader that proposes another) or a discarded Candidate."""
    ctx, proposal = state.ctx, state.proposal
    f2p = state.record.FAIL_TO_PASS
    if len(proposal.applied) < 2 or len(proposal.steps) != len(proposal.applied):
        applied = [a.model_copy(update={"necessary": True, "fixes": list(f2p)}) for a in proposal.applied]
        state.record.operators = applied
        return None
    order = proposal.order
    still = minimal.leave_one_out(ctx.runtime, ctx.gold, tag, proposal.ordered_steps, f2p, proposal.sample,
                                  state.seconds)
    fixes = {index: still[position] for position, index in enumerate(order)}
    applied = []
    for i, change in enumerate(proposal.applied):
        blocks = None
        if change.role == "blocker":
            others = [proposal.steps[j] for j in order if j != i and proposal.applied[j].role == "blocker"]
            blocks = minimal.blocks(ctx.runtime, ctx.gold, tag, proposal.steps[i], others, proposal.naive, f2p,
                                    proposal.sample, state.seconds)
        applied.append(change.model_copy(update={"necessary": bool(fixes[i]), "fixes": fixes[i], "blocks": blocks}))
    state.record.operators = applied
    kept = [i for i, a in enumerate(applied) if a.necessary or a.blocks]
    if len(kept) == len(applied):
        return None
    if not proposal.reducible and proposal.retry:
        return Miss()  # a plan whose changes do not all matter: the degrader proposes another
    if not proposal.reducible:
        return state.discarded("not_minimal", "a change is not necessary: the repair works without undoing it "
                               f"({', '.join(a.name for a in applied if not (a.necessary or a.blocks))})")
    # none needed: each repair alone suffices; the first alone is checked from the start
    kept = kept or [0]
    return Reduced(proposal.keep_only(kept), [a.pair for i, a in enumerate(applied) if i not in kept])


def _not_reproduced(fresh: list[str], expected: list[str]) -> str:
    extra, gone = sorted(set(fresh) - set(expected)), sorted(set(expected) - set(fresh))
    if not extra and not gone:
        return ""
    return (f"gold + ΔD fails {len(extra)} more {extra[:3]} and {len(gone)} fewer {gone[:3]} tests "
            "than the degrader's container")


def _verify_and_save(state: _Attempt, tag: str, instance_id: str, first: TestRun) -> Candidate:
    ctx, proposal, record = state.ctx, state.proposal, state.record
    gold = ctx.gold
    f2p, p2p = record.FAIL_TO_PASS, record.PASS_TO_PASS
    solution = proposal.solution
    if proposal.derive_solution:
        def solution(report: LeakReport) -> str:
            return state.degrader.derived_solution(ctx, report)
    verification = check_broken_state(ctx.runtime, gold, ctx.probe.files, tag, f2p, p2p, solution,
                                 order=proposal.sample, untouchable=touches_tests(gold) if proposal.keep_tests else None)
    state.seconds.update(verification.seconds)
    if proposal.derive_solution and (verification.ok or len(verification.solution) <= KEEP_SOLUTION_BYTES):
        record.solution = verification.solution  # a derived one: discards keep small ones only
    record.extra_bytes = extra_bytes(ctx.runtime, gold, tag)
    if not verification.ok:
        return state.discarded(verification.kind or "error", verification.reason)
    applied = record.operators
    difficulty = None
    if applied and len(proposal.steps) == len(applied):
        changes = [applied[i] for i in proposal.order]
        difficulty = measure(ctx.runtime, gold, tag, changes, proposal.ordered_steps, f2p, first,
                             proposal.dockerfile, state.seconds)
    task = TaskInstance(
        instance_id=instance_id, repo=gold.source.spec, image_name=gold.image, gold_image_id=gold.image_id,
        workdir=gold.workdir, test_command=gold.test_command, dockerfile=proposal.dockerfile,
        FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p, selected_tests=proposal.sample,
        solution=verification.solution or record.solution, errors=error_excerpts(first, f2p),
        changed_paths=verification.changed_paths, fail_fraction=record.fail_fraction, suite_size=len(gold.tests),
        extra_bytes=record.extra_bytes, seed=ctx.seed, attempt=record.attempt,
        applied=applied if proposal.applied else [],
        offline_fair=all(a.offline for a in applied) if proposal.applied else None,
        repair_steps=proposal.ordered_steps, difficulty=difficulty,
        **state.degrader.task_fields(proposal, verification).model_dump(),
    )
    issues = write_issues(task)
    problems = check_issues(task, issues)
    if problems:
        return state.discarded("bad_text", "; ".join(problems))
    save(issues, ctx.run.issues(instance_id))
    save(task, ctx.run.instance(instance_id))
    return state.verified(instance_id)
