"""The attempt pipeline both degraders share.

A ``Degrader`` proposes a broken state for one attempt (``propose``): the Dockerfile delta
ΔD, the tests to run, how to repair it, and what the task record should say. Everything
after that is the same whoever proposed it, and lives here once:

1. the delta's digest names the task; a task of another attempt with the same delta makes
   this one a duplicate (a degrader that may try again proposes another);
2. gold + ΔD is built from scratch (no layer cache);
3. the screen: the tests the degrader predicts to fail run first. When none fails (or ΔD
   did not build, or the full run below fails a share of the sample the degrader does not
   ``accept``), a degrader that may (``retry``) proposes again within the attempt, up to
   ``MAX_TRIES`` proposals, told of the attempt's misses so far (``Try``);
4. the selected tests run in a fresh container of it. When the degrader saw the tests fail
   itself (the agent, in its own container), the fresh run must fail exactly the same set
   (``reproduced``); otherwise this run decides FAIL_TO_PASS and PASS_TO_PASS;
5. minimality (``cligym.invert.minimal``): a state of several changes keeps only the
   needed changes and the blockers that block; with decoys dropped the smaller state goes
   through the pipeline again from step 1 (a proposal that cannot be reduced is a miss);
6. the difficulty is measured (``cligym.verify.difficulty``, once per state): a state the
   task-blind sweeper repairs while the run has its share of such is a miss (the degrader,
   told so, may propose another), before the costliest checks. A run that leaves a core of
   the engine idle (``RunContext.beside``) measures it while the checks of step 7 run, and
   checks the blockers while leave-one-repair-out runs (step 5): the same containers, at once;
7. ``cligym.verify.check_broken_state``: a repeat run, the leak scan, no untouchable path
   changed, and the solution makes every selected test pass;
8. the Task and its issue texts are saved (a text ``check_issues`` refuses discards the
   attempt), then the Candidate; the broken image is removed whatever happened.

Each attempt is seeded by (the degrader's seed prefix, the run's seed, the attempt number)
alone, so a run is reproducible and a resumed run makes the same attempts.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cligym.errors import BuildFailed, CligymError, Fatal
from cligym.harness.images import broken_tag, build_broken, delta_digest, extra_bytes
from cligym.harness.testrun import hang_timeout, run_tests
from cligym.invert import minimal
from cligym.invert.beside import beside
from cligym.invert.context import RunContext, classify, error_excerpts
from cligym.invert.dockerfile import touches_tests
from cligym.invert.proposal import Degrader, Proposal, Try, repairs
from cligym.issue import check_issues, write_issues
from cligym.models.io import load, save
from cligym.models.task import Candidate, Difficulty, Task
from cligym.models.testrun import TestRun
from cligym.models.timing import Phase, PhaseSeconds
from cligym.models.verify import Verification
from cligym.verify import check_broken_state
from cligym.verify.carried import offline_fair
from cligym.verify.difficulty import measure

#: A discarded attempt keeps its derived solution (for a look) only up to this size.
KEEP_SOLUTION_BYTES = 256 * 1024


def forget_orphans(ctx: RunContext) -> None:
    """Remove the task records whose attempt has no candidate record: an interrupted try
    saved the task just before its candidate, and a redo that makes another delta (a model
    seldom makes the same one twice) would leave it behind, uncounted."""
    for record in ctx.run.task_records():
        try:
            task = load(Task, record)
        except CligymError:
            continue
        if not ctx.run.candidate(task.attempt).exists():
            shutil.rmtree(record.parent, ignore_errors=True)


#: How many proposals one attempt may build when the screen finds no failure, and how many
#: of the last ones take any state that fails something (``Degrader.accept``'s ``late``).
MAX_TRIES = 8
LATE_TRIES = 3
#: How many states the task-blind sweeper repairs (while the run has its share of such) an
#: attempt may try: each costs the whole difficulty measure before it is known (a huge
#: suite's attempt spent 280 s on eight tries, four of them swept).
MAX_SWEPT_TRIES = 2


@dataclass
class Miss:
    """The proposal made no state worth checking (nothing failed, ΔD did not build, an
    earlier task has the same ΔD, or the degrader does not accept the share that failed,
    ``fail_fraction``): the attempt may try another proposal. ``found``: what the check
    found (the Candidate's fields), kept when the attempt ends with it."""

    fail_fraction: float | None = None
    found: dict = field(default_factory=dict)
    swept: bool = False  # the task-blind sweeper repairs the state, and the run's share of such is full


@dataclass
class Reduced:
    """Minimality dropped decoy changes: the smaller state is checked from the start."""

    proposal: Proposal
    decoys: list[str]


@dataclass
class Ended:
    """The attempt ends: the Candidate's fields its check decided (status and what it found)."""

    fields: dict


#: What checking one proposal comes to: the attempt's end, a miss, or a smaller state.
Outcome = Ended | Miss | Reduced


def _discarded(found: dict, kind: str, reason: str) -> Ended:
    return Ended({**found, "status": "discarded", "discard_kind": kind, "reason": reason[:500]})


def _no_state(tries: list[Try]) -> str:
    refused = {t.entry for t in tries if t.fail_fraction is not None}
    swept = {t.entry for t in tries if t.swept}
    if not refused and not swept:
        return f"no selected test failed in {len(tries)} tries"
    why = [f"{len(refused)} made a state the run's shares refuse: too broad a failure, or a set of failing "
           "tests its tasks fail often enough"] if refused else []
    if swept:
        why.append(f"{len(swept)} made a state the task-blind sweeper repairs, of which the run has its share")
    return f"no state taken in {len(tries)} tries ({'; '.join(why)})"


def make_attempt(ctx: RunContext, degrader: Degrader, attempt: int) -> Candidate:
    """Make one attempt: its degrader's proposals (another after each miss, when it may;
    each reduction has fewer changes), each checked by the pipeline, until one ends it."""
    rng = random.Random(f"{degrader.seed_prefix}:{ctx.seed}:{attempt}")
    seconds = PhaseSeconds()
    tries: list[Try] = []
    decoys: list[str] = []
    proposal = degrader.propose(ctx, attempt, rng, [])
    while True:
        seconds.absorb(proposal.seconds)
        if proposal.discard is not None:
            end = _discarded({}, *proposal.discard)
            break
        check = _Check(ctx, proposal.by or degrader, proposal, attempt, seconds,
                       late=len(tries) >= MAX_TRIES - LATE_TRIES)
        outcome = _check_new(check)
        if isinstance(outcome, Reduced):
            decoys.extend(outcome.decoys)
            proposal = outcome.proposal
            continue
        if isinstance(outcome, Ended):
            end = outcome
            break
        tries.append(Try(proposal, outcome.fail_fraction, outcome.swept))
        if sum(t.swept for t in tries) >= MAX_SWEPT_TRIES:
            end = _discarded(outcome.found, "sweeper_solves", f"{MAX_SWEPT_TRIES} of its states the task-blind "
                             "sweeper repairs, of which the run has its share")
            break
        if not proposal.retry or len(tries) >= MAX_TRIES:
            end = _discarded(outcome.found, "no_failure", _no_state(tries))
            break
        proposal = degrader.propose(ctx, attempt, rng, list(tries))
    notes = {name: getattr(proposal.notes, name) for name in proposal.notes.model_fields_set}
    return Candidate(**{
        "id": f"{attempt:04d}", "attempt": attempt, "seed": ctx.seed, "sample": proposal.sample,
        "dockerfile": proposal.dockerfile, "operators": proposal.applied, "solution": proposal.solution, **notes,
        **end.fields, "seconds": seconds, "screened": [t.entry for t in tries], "decoys": list(decoys),
        "refused": {t.entry: t.fail_fraction for t in tries if t.fail_fraction is not None},
    })


@dataclass(frozen=True)
class _Check:
    """One proposal under check: the policy that owns it, its attempt, the attempt's seconds
    (added to in place), and whether this is one of the attempt's last tries."""

    ctx: RunContext
    policy: Degrader
    proposal: Proposal
    attempt: int
    seconds: PhaseSeconds
    late: bool = False

    def timed(self, phase: Phase, started: float) -> None:
        self.seconds.add(phase, time.monotonic() - started)


def _split(run: TestRun, sample: list[str]) -> dict:
    """The Candidate's FAIL_TO_PASS, PASS_TO_PASS and fail_fraction of ``run``."""
    f2p, p2p = classify(run, sample)
    return {"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p, "fail_fraction": round(len(f2p) / len(sample), 4)}


def _check_new(check: _Check) -> Outcome:
    """The checks of ``_steps``, unless an earlier attempt made a task of the same delta."""
    ctx, proposal, attempt = check.ctx, check.proposal, check.attempt
    found = _split(proposal.observed, proposal.sample) if proposal.observed is not None else {}
    digest = delta_digest(ctx.gold, proposal.dockerfile)
    if ctx.order is not None:  # attempts at once: check as one at a time would
        ctx.order.claim(digest, attempt)
    try:
        instance_id = f"{ctx.gold.source.name}.{proposal.name}.{digest}"
        record = ctx.run.task_record(instance_id)
        if record.exists() and load(Task, record).attempt != attempt:
            if proposal.retry:
                return Miss(found=found)  # nothing new to learn from building it again: try another
            return _discarded(found, "duplicate", "the same delta as an earlier attempt")
        tag = broken_tag(ctx.gold, digest)
        try:
            return _steps(check, tag, instance_id, found)
        except Fatal:
            raise  # the engine is gone: stop the run, the attempt is redone on resume
        except CligymError as exc:
            return _discarded(found, "error", str(exc))
        finally:
            ctx.runtime.remove_image(tag)
    finally:
        if ctx.order is not None:
            ctx.order.release(digest, attempt)


def _steps(check: _Check, tag: str, instance_id: str, found: dict) -> Outcome:
    """The checks in order; each returns what it found, which is recorded in ``found`` here
    (the caller's: an error's discard keeps it too)."""
    ctx, proposal = check.ctx, check.proposal
    started = time.monotonic()
    try:
        build_broken(ctx.runtime, ctx.gold, proposal.dockerfile, tag)
    except BuildFailed as exc:
        if proposal.observed is not None:
            found["reproduced"] = False
        elif proposal.retry:
            check.timed("build", started)
            return Miss(found=found)  # a state that cannot be made breaks nothing: try another
        return _discarded(found, "build_failed", str(exc))
    check.timed("build", started)
    fresh = _run(check, tag)
    if fresh is None or (fresh.timed_out and proposal.observed is None):
        return Miss(found=found)  # the screen found no failure, or the state hangs: no task either
    if fresh.timed_out:
        limit = hang_timeout(ctx.gold.test_seconds)
        return _discarded(found, "not_reproducible", f"the sample's run hung (over {limit:.0f} s)")
    if proposal.observed is None:
        found.update(_split(fresh, proposal.sample))
        if not found["FAIL_TO_PASS"]:
            return Miss(found=found)
        if not check.policy.accept(proposal, found["FAIL_TO_PASS"], check.late):
            return Miss(found["fail_fraction"], found)  # the degrader wants another share broken
    else:
        reason = _not_reproduced(classify(fresh, proposal.sample)[0], found["FAIL_TO_PASS"])
        found["reproduced"] = not reason
        if reason:
            return _discarded(found, "not_reproducible", reason)
    applied = found["operators"] = minimal.evidence(ctx, proposal, tag, found["FAIL_TO_PASS"], check.seconds)
    kept = [i for i, a in enumerate(applied) if a.necessary or a.blocks]
    if len(kept) < len(applied):
        if not proposal.reducible and proposal.retry:
            return Miss(found=found)  # a plan whose changes do not all matter: the degrader proposes another
        if not proposal.reducible:
            return _discarded(found, "not_minimal", "a change is not necessary: the repair works without undoing it "
                              f"({', '.join(a.name for a in applied if not (a.necessary or a.blocks))})")
        kept = kept or [0]  # none needed: each repair alone suffices; the first alone is checked from the start
        smaller = proposal.keep_only(kept)
        if proposal.retry and ctx.sweeper_share_full() and check.policy.undone(smaller):
            return Miss(found=found)  # what is left the sweeper undoes (declared): its measure is not spent
        return Reduced(smaller, [a.pair for i, a in enumerate(applied) if i not in kept])
    first = proposal.observed or fresh

    def measuring(seconds: PhaseSeconds) -> Difficulty | None:
        return measure(ctx.runtime, ctx.gold, tag, [applied[i] for i in proposal.order], proposal.ordered_steps,
                       found["FAIL_TO_PASS"], first, proposal.dockerfile, seconds, state=ctx.state) if applied else None

    if ctx.beside and not ctx.sweeper_share_full():
        return _verify_and_save(check, tag, instance_id, first, found, None, measuring=measuring)
    difficulty = measuring(check.seconds)
    if difficulty is not None and difficulty.sweeper_solves and ctx.sweeper_share_full():
        return _swept_out(check, found)
    return _verify_and_save(check, tag, instance_id, first, found, difficulty)


def _run(check: _Check, tag: str) -> TestRun | None:
    """The screen (the tests predicted to fail, when they are fewer than the sample), then
    the sample; None when the screen finds no failure or hangs."""
    ctx, proposal, gold = check.ctx, check.proposal, check.ctx.gold
    started = time.monotonic()
    predicted = set(proposal.screen)
    screen = [t for t in proposal.sample if t in predicted]
    limit = hang_timeout(gold.test_seconds)
    if screen and len(screen) < len(proposal.sample):
        screened = run_tests(ctx.runtime, tag, gold.workdir, gold.test_command, screen, timeout=limit)
        check.timed("screen", started)
        if screened.timed_out or not classify(screened, screen)[0]:
            return None
        started = time.monotonic()
    fresh = run_tests(ctx.runtime, tag, gold.workdir, gold.test_command, proposal.sample, timeout=limit)
    check.timed("run" if proposal.observed is None or fresh.timed_out else "rerun", started)
    return fresh


def _swept_out(check: _Check, found: dict) -> Outcome:
    """A state the sweeper repairs while the run has its share of such: another proposal
    when the degrader may make one (told it was swept), else the attempt's end."""
    if check.proposal.retry:
        return Miss(found=found, swept=True)
    return _discarded(found, "sweeper_solves", "the task-blind sweeper repairs it, and with it more than "
                                               f"{check.ctx.sweeper_share:.0%} of the run's tasks would be such")


#: Runs of the gold image that look for a flaky test among those a repair left failing.
FLAKY_RUNS = 3


def _flaky_on_gold(check: _Check, still: list[str]) -> list[str]:
    """Those of ``still`` (failing after a solution) that the gold image itself fails now,
    in one of ``FLAKY_RUNS`` runs: tests that pass on an idle machine and fail under load (a
    timing test) — no task may hang its reward on them. They leave the run's gold tests
    (``RunContext.drop_flaky``)."""
    ctx = check.ctx
    found: set[str] = set()
    started = time.monotonic()
    for _ in range(FLAKY_RUNS if still else 0):
        run = run_tests(ctx.runtime, ctx.gold.image, ctx.gold.workdir, ctx.gold.test_command, still,
                        timeout=hang_timeout(ctx.gold.test_seconds))
        if run.report_found and not run.timed_out:  # a run that reports nothing says nothing of a test
            found |= set(run.failing(still))
    check.timed("flaky", started)
    flaky = [t for t in still if t in found]
    if flaky:
        ctx.drop_flaky(flaky)
    return flaky


def _not_reproduced(fresh: list[str], expected: list[str]) -> str:
    extra, gone = sorted(set(fresh) - set(expected)), sorted(set(expected) - set(fresh))
    if not extra and not gone:
        return ""
    return (f"gold + ΔD fails {len(extra)} more {extra[:3]} and {len(gone)} fewer {gone[:3]} tests "
            "than the degrader's container")


#: How a state's difficulty is measured, its seconds added to the given record (``measure``).
Measuring = Callable[[PhaseSeconds], Difficulty | None]


def _verify_and_save(check: _Check, tag: str, instance_id: str, first: TestRun, found: dict,
                     difficulty: Difficulty | None, measuring: Measuring | None = None) -> Outcome:
    """The verifier's checks, then the issue texts; the Task saved (with its ``difficulty``,
    measured before or, with ``measuring``, while the checks run: ``cligym.invert.beside``)."""
    ctx, proposal, policy, gold = check.ctx, check.proposal, check.policy, check.ctx.gold
    f2p, p2p = found["FAIL_TO_PASS"], found["PASS_TO_PASS"]
    measured: dict[str, tuple[bool, int]] = {}  # offline_fair of a script, measured already
    solution, fallback = repairs(ctx, proposal, policy, measured)

    def verify() -> Verification:
        return check_broken_state(ctx.runtime, gold, ctx.probe.files, tag, f2p, p2p, solution,
                                  order=proposal.sample,
                                  untouchable=touches_tests(gold) if proposal.keep_tests else None,
                                  state=ctx.state, fallback=fallback, store=ctx.run.references)

    if measuring is None:
        verification = verify()
    else:
        verification, difficulty = beside(ctx.runtime, check.seconds, verify, measuring, "difficulty")
    check.seconds.absorb(verification.seconds)
    if proposal.derive_solution and (verification.ok or len(verification.solution) <= KEEP_SOLUTION_BYTES):
        found["solution"] = verification.solution  # a derived one: discards keep small ones only
    found["extra_bytes"] = extra_bytes(ctx.runtime, gold, tag)
    if not verification.ok:
        if _flaky_on_gold(check, verification.still_failing) and check.proposal.retry:
            return Miss(found=found)  # the run samples them no more: try again
        return _discarded(found, verification.kind or "error", verification.reason)
    applied = found["operators"]
    if difficulty is not None and difficulty.sweeper_solves and ctx.sweeper_share_full():
        return _swept_out(check, found)  # the share filled while this state was checked
    fair, carried = measured.get(verification.solution) or offline_fair(verification.solution, ctx.gold_session,
                                                                        ctx.probe.files, verification.changed_paths)
    task = Task(
        instance_id=instance_id, repo=gold.source.spec, image_name=gold.image, gold_image_id=gold.image_id,
        workdir=gold.workdir, test_command=gold.test_command, dockerfile=proposal.dockerfile,
        FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p, selected_tests=proposal.sample,
        solution=verification.solution or found.get("solution", proposal.solution), errors=error_excerpts(first, f2p),
        changed_paths=verification.changed_paths, fail_fraction=found["fail_fraction"], suite_size=len(gold.tests),
        extra_bytes=found["extra_bytes"], seed=ctx.seed, attempt=check.attempt, applied=applied,
        offline_fair=fair, carried_bytes=carried,
        solution_origin="derived" if proposal.derive_solution and verification.solution != proposal.solution
        else "degrader",
        repair_steps=proposal.ordered_steps, difficulty=difficulty, state=ctx.state,
        **proposal.task.model_dump(),
    )
    issues = write_issues(task)
    problems = check_issues(task, issues)
    if problems:
        return _discarded(found, "bad_text", "; ".join(problems))
    save(issues, ctx.run.issues(instance_id))
    save(task, ctx.run.task_record(instance_id))
    return Ended({**found, "status": "verified", "instance_id": instance_id})
