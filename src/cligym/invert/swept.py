"""The run's share of states the task-blind sweeper repairs (``RunContext.sweeper_share``):
whether it is full, and the sweeper asked early when it is."""

from __future__ import annotations

import time

from cligym.invert.context import RunContext
from cligym.models.io import load
from cligym.models.task import Task
from cligym.models.timing import PhaseSeconds
from cligym.verify.difficulty import sweeper_solves


def share_full(ctx: RunContext) -> bool:
    """Whether one more task the task-blind sweeper repairs would raise the run's share of
    such above ``ctx.sweeper_share`` (counted from the saved records, so a resumed run
    counts what its earlier part made)."""
    if ctx.sweeper_share is None:
        return False
    tasks = [load(Task, path) for path in ctx.run.task_records()]
    swept = sum(bool(t.difficulty and t.difficulty.sweeper_solves) for t in tasks)
    return swept + 1 > ctx.sweeper_share * (len(tasks) + 1)


def sweeper_first(ctx: RunContext, image: str, f2p: list[str], seconds: PhaseSeconds) -> bool | None:
    """The sweeper's answer for the state in ``image``, asked before the verifier's checks
    when the run's share is full already (a state it repairs would be refused at the end,
    after the costliest checks); None when the share has room (the difficulty measure asks
    it then, beside the reveal rounds)."""
    if not share_full(ctx):
        return None
    started = time.monotonic()
    solves = sweeper_solves(ctx.runtime, ctx.gold, image, f2p, ctx.state)
    seconds.add("difficulty", time.monotonic() - started)
    return solves
