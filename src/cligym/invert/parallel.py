"""The run loop: every attempt of a run, one at a time or several at a time (for a degrader
whose attempts wait on a model server, the LLM agent: a real endpoint serves many requests
at once).

Each attempt draws its choices from its own seed (the pipeline's rule), so the same seed
makes the same attempts whatever ``workers`` is. What an attempt learns from earlier ones
is fixed too: attempt *i* starts only once attempt *i - workers* is finished and sees the
attempts up to that one (``Degrader.seen`` is called in attempt order), never a set that
depends on which threads happened to be faster.

Finished attempts are saved as they finish, so an interrupted run (a signal, a fatal model
or engine error, ``kill -9``) resumes with the same command; attempts it cut short are not
saved and are made again.
"""

from __future__ import annotations

import threading
import time

from cligym.harness.workers import run_workers
from cligym.invert.context import CheckOrder, RunContext, Stopped, wait_until
from cligym.invert.pipeline import Degrader, forget_orphans, make_attempt
from cligym.harness.images import selected_run_seconds
from cligym.invert.summary import summarize
from cligym.models.io import load, save
from cligym.models.run import Summary
from cligym.models.task import Candidate


class _Order:
    """Which attempts are finished, and telling the degrader of them in attempt order."""

    def __init__(self, degrader: Degrader) -> None:
        self.degrader = degrader
        self.finished: dict[int, Candidate] = {}
        self.told = 0  # attempts 0 .. told-1 have been passed to ``degrader.seen``
        self.changed = threading.Condition()

    def finish(self, attempt: int, candidate: Candidate) -> None:
        with self.changed:
            self.finished[attempt] = candidate
            while self.told in self.finished:
                self.degrader.seen(self.finished[self.told])
                self.told += 1
            self.changed.notify_all()

    def wait_told(self, count: int, stop: threading.Event, spent) -> None:
        """Wait until the first ``count`` attempts are told, or the run's budget is
        ``spent()`` (no attempt after it starts); Stopped when stopped first."""
        with self.changed:
            wait_until(self.changed, lambda: self.told >= count or spent(), stop)


#: How an attempt ends when its degrader found nothing new to break: no target in its
#: samples, only symptoms the run has made enough of, no state that fails a test, or only a
#: state the task-blind sweeper repairs while the run holds its share of such (a site whose
#: faults an admin's habits undo: seen on a one-module project whose every attempt was swept).
NOTHING_NEW = frozenset({"no_target", "worn_symptom", "no_failure", "sweeper_solves"})


def exhausted(finished: dict[int, Candidate], patience: int) -> bool:
    """Whether the last ``patience`` attempts of those finished in a row from the first all
    ended with nothing new to break (never for a patience of 0)."""
    done = 0
    while done in finished:
        done += 1
    last = [finished[a] for a in range(max(0, done - patience), done)]
    return patience > 0 and len(last) == patience and all(
        c.status == "discarded" and c.discard_kind in NOTHING_NEW for c in last)


def run_attempts(ctx: RunContext, degrader: Degrader, attempts: int, *, workers: int = 1,
                 max_tasks: int | None = None, deadline: float | None = None) -> Summary:
    """Make every attempt that has no candidate record yet, up to ``workers`` at once, then
    save the summary. No new attempt starts once ``max_tasks`` tasks are verified, after
    ``deadline`` (``time.time()``), or once the degrader's last ``patience`` attempts found
    nothing new to break (``exhausted``: a site that offers no more distinct symptoms); with
    one worker the attempts made are then a prefix of the full run's, so a later run with a
    larger budget goes on where this one stopped.
    When the run stops early the degrader is told (``stop_now``); it should raise
    ``Stopped`` from an attempt it cut short."""
    forget_orphans(ctx)
    stop = threading.Event()
    order = _Order(degrader)
    for attempt in range(attempts):
        if ctx.run.candidate(attempt).exists():
            order.finish(attempt, load(Candidate, ctx.run.candidate(attempt)))
            ctx.reporter.advance()
    todo = [a for a in range(attempts) if a not in order.finished]
    ctx.order = CheckOrder(todo, stop) if workers > 1 else None

    def spent() -> bool:
        finished = dict(order.finished)
        verified = sum(c.status == "verified" for c in finished.values())
        return (max_tasks is not None and verified >= max_tasks) or (deadline is not None and time.time() >= deadline) \
            or exhausted(finished, degrader.patience)

    def one(attempt: int) -> None:
        try:
            if not spent():
                order.wait_told(attempt - workers + 1, stop, spent)
            candidate = None if spent() else make_attempt(ctx, degrader, attempt)
        except Stopped:
            return  # made again when the run is resumed
        finally:
            if ctx.order is not None:
                ctx.order.ended(attempt)
        if candidate is None or stop.is_set():
            return
        save(candidate, ctx.run.candidate(attempt))
        order.finish(attempt, candidate)
        ctx.reporter.advance()

    def stop_now() -> None:
        stop.set()
        degrader.stop_now()  # e.g. the model client's back-off waits end at once

    run_workers(one, todo, workers, stop=stop_now, runtime=ctx.runtime, name="attempt")
    samples = [c.sample for _, c in sorted(order.finished.items())]
    summary = summarize(ctx.run, ctx.gold, attempts, selected_run_seconds(ctx.runtime, ctx.gold, samples))
    summary.exhausted = exhausted(order.finished, degrader.patience)
    save(summary, ctx.run.summary)
    return summary

