"""Is every change of a composite broken state necessary? Leave-one-repair-out and the
blocker check.

Leave-one-repair-out: the full repair with step i left out, run in the broken image, leaves
some FAIL_TO_PASS test failing — so the change step i undoes matters. This keeps faults
that *chain* (fixing the first reveals the second: left alone, either keeps the tests
failing) and drops decoys (a change whose repair is not needed: its breakage hides behind
another's, or breaks nothing at all), so an agent that undoes only the others is never
rewarded while a needed change stays broken.

The blocker check: a blocker is a change that breaks no test by itself but makes the
obvious repair of the others fail (an empty wheelhouse in pip's configuration, a missing
``RECORD`` that makes pip refuse to reinstall). It holds when, with every other blocker
repaired, the naive repair run in the broken image leaves some F2P test failing, and the
blocker's own repair before the same naive repair makes every F2P test pass.

Both run scripts in containers of the broken image (no builds): one run per step (all at
once), two per blocker; where the engine has a core the run leaves idle, the blocker checks
beside leave-one-repair-out (``evidence``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial

from cligym.harness.images import at_once, repair_and_test
from cligym.harness.repair import repair_script
from cligym.harness.testrun import hang_timeout
from cligym.invert.beside import beside
from cligym.invert.context import RunContext
from cligym.invert.proposal import Proposal
from cligym.models.gold import GoldEnv
from cligym.models.task import AppliedChange, RepairStep
from cligym.models.timing import PhaseSeconds
from cligym.runtime import Runtime


def _ordered(f2p: list[str], order: list[str]) -> list[str]:
    wanted = set(f2p)
    return [t for t in order if t in wanted] or sorted(wanted)


def _still_failing(runtime: Runtime, gold: GoldEnv, image: str, script: str, tests: list[str]) -> list[str]:
    """The ``tests`` not passing after ``script`` ran in a fresh container of ``image``."""
    _, _, run = repair_and_test(runtime, image, gold, script, tests, timeout=hang_timeout(gold.test_seconds))
    return run.failing(tests)


def leave_one_out(runtime: Runtime, gold: GoldEnv, image: str, steps: Sequence[RepairStep], f2p: list[str],
                  order: list[str], seconds: PhaseSeconds) -> list[list[str]]:
    """Per step (in ``steps``' order), the F2P tests still failing when the repair runs
    without it (each in its own container, at once); the time spent is added to
    ``seconds.minimal``."""
    started = time.monotonic()
    tests = _ordered(f2p, order)
    # one container each, all at once: each judges the broken image alone
    out = at_once(runtime, [partial(_still_failing, runtime, gold, image, repair_script(steps, skip=i), tests)
                            for i in range(len(steps))])
    seconds.add("minimal", time.monotonic() - started)
    return out


def blocks(runtime: Runtime, gold: GoldEnv, image: str, blocker: RepairStep, others: Sequence[RepairStep],
           naive: Sequence[RepairStep], f2p: list[str], order: list[str], seconds: PhaseSeconds) -> bool:
    """The blocker check: with the ``others`` blockers repaired, ``naive`` leaves some F2P
    test failing while ``blocker`` stands, and none once it is repaired too."""
    started = time.monotonic()
    tests = _ordered(f2p, order)
    try:
        if not naive or not _still_failing(runtime, gold, image, repair_script([*others, *naive]), tests):
            return False
        return not _still_failing(runtime, gold, image, repair_script([*others, blocker, *naive]), tests)
    finally:
        seconds.add("blocker", time.monotonic() - started)


def evidence(ctx: RunContext, proposal: Proposal, image: str, f2p: list[str],
             seconds: PhaseSeconds) -> list[AppliedChange]:
    """Each change of ``proposal`` with its minimality evidence, checked in ``image``; a
    state of one change (or none) needs no check."""
    changes = proposal.changes
    if len(changes) < 2:
        return [c.applied.model_copy(update={"necessary": True, "fixes": list(f2p)}) for c in changes]
    order = proposal.order

    def each_left_out() -> list[list[str]]:
        return leave_one_out(ctx.runtime, ctx.gold, image, proposal.ordered_steps, f2p, proposal.sample, seconds)

    def blockers(spent: PhaseSeconds) -> dict[int, bool]:
        """Each blocker's check, by its change's index."""
        found = {}
        for i, change in enumerate(changes):
            if change.applied.role == "blocker":
                others = [changes[j].step for j in order if j != i and changes[j].applied.role == "blocker"]
                found[i] = blocks(ctx.runtime, ctx.gold, image, change.step, others, proposal.naive, f2p,
                                  proposal.sample, spent)
        return found

    if ctx.beside:
        still, blocking = beside(ctx.runtime, seconds, each_left_out, blockers, "blocker")
    else:
        still, blocking = each_left_out(), blockers(seconds)
    fixes = {index: still[position] for position, index in enumerate(order)}
    return [change.applied.model_copy(update={"necessary": bool(fixes[i]), "fixes": fixes[i],
                                              "blocks": blocking.get(i)})
            for i, change in enumerate(changes)]
