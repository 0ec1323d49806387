"""The validity checks for a broken state: reproducible, non-trivial, solvable, leak-free,
and judged right by the verifier its task will ship (see ``verifier_check``)."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from cligym.errors import BuildFailed, CligymError
from cligym.harness.images import build_broken
from cligym.harness.reference import gather
from cligym.harness.testrun import run_tests, run_tests_in_session
from cligym.harness.trial import judge_image
from cligym.layout import ReferenceStore
from cligym.models.fs import LeakReport, Listing
from cligym.models.reference import SystemState
from cligym.models.gold import GoldEnv
from cligym.models.task import run_order
from cligym.models.testrun import TestRun
from cligym.models.timing import PhaseSeconds
from cligym.models.validate import ModeResult
from cligym.models.verify import Verification
from cligym.runtime import ImageKind, Runtime
from cligym.verify.leaks import scan_in


def _failed(kind: str, reason: str, **more: Any) -> Verification:
    return Verification(ok=False, kind=kind, reason=reason, **more)


def check_broken_state(
    runtime: Runtime,
    gold: GoldEnv,
    gold_listing: Listing,
    image: str,
    f2p: list[str],
    p2p: list[str],
    solution: str | Callable[[LeakReport], str],
    *,
    repeats: int = 1,
    timeout: float = 900,
    order: list[str] | None = None,
    untouchable: Callable[[str], bool] | None = None,
    state: SystemState | None = None,
    fallback: Callable[[LeakReport], str] | None = None,
    store: ReferenceStore | None = None,
) -> Verification:
    """Check a broken image built from gold + ΔD alone against the recorded F2P/P2P sets.

    (a)+(c) ``repeats`` more runs with nothing done fail exactly F2P and pass P2P (which
        tests failed: ``TestRun.failing``, the one rule); the first in the container of the
        leak scan, after it (the scan only reads), the others each in a fresh one;
    (d) the leak scan of the image against gold is clean, and ΔD touched no path for which
        ``untouchable`` is true (e.g. the test files);
    (b) the solution script, then the tests in the same container: F2P and P2P pass;
    (e) the task's own verifier gives 0 with nothing done and 1 after the solution, judging
        the container of (b) (``verifier_check`` does both).
    ``solution`` may be a function deriving the script from the scan's differences; one
    that raises CligymError makes the state not solvable. ``fallback``: a second repair,
    derived and checked when the first fails (b) or (e); with it, a state neither repairs is
    ``no_offline_repair``, and ``Verification.refused`` says why each failed. ``state``: a Debian-world task's
    (``Task.state``), which its verifier compares. ``store``: where the gold reference read for
    (e) is kept (the run's: its export reads it there).
    """
    seconds = PhaseSeconds()
    wanted = set(f2p) | set(p2p)
    selected = [t for t in order if t in wanted] if order and set(order) >= wanted else sorted(wanted)
    with runtime.session(image) as session:  # the scan only reads: the first repeat runs after it
        started = time.monotonic()
        report = scan_in(runtime, gold.image, gold_listing, session)
        seconds.leak_scan = time.monotonic() - started
        started = time.monotonic()
        first = [run_tests_in_session(session, gold.workdir, gold.test_command, selected, timeout=timeout)] \
            if repeats else []
    more = (run_tests(runtime, image, gold.workdir, gold.test_command, selected, timeout=timeout)
            for _ in range(repeats - 1))  # made one by one, none after a run that differs
    differs = _repeats_differ(itertools.chain(first, more), selected, f2p)
    seconds.repeat = time.monotonic() - started
    if differs is not None:
        return differs

    changed_paths = sorted(set(report.added) | set(report.changed) | set(report.deleted))
    done = {"seconds": seconds, "changed_paths": changed_paths}
    if not report.clean:
        first = report.findings[0]
        return _failed("leak", f"{first.kind}: {first.path} {first.detail}", leaks=report.findings, **done)
    touched = [p for p in changed_paths if untouchable(p)] if untouchable else []
    if touched:
        return _failed("tests_changed", f"the delta changed test files: {touched[:3]}", **done)

    started = time.monotonic()
    refused: list[str] = []
    script = ""
    for candidate in [solution, *([fallback] if fallback else [])]:
        try:
            script = candidate(report) if callable(candidate) else candidate
        except CligymError as exc:
            verification = _failed("not_solvable", f"no solution could be derived: {exc}")
        else:
            verification = verifier_check(runtime, gold, image, f2p, p2p, selected, script, timeout=timeout,
                                          state=state, store=store)
            if verification.ok or verification.kind == "trivial":  # the state's fault, not the repair's
                break
        refused.append(f"{'the fallback' if refused else 'the repair'}: {verification.reason[:240]}")
    seconds.verifier = time.monotonic() - started
    if not verification.ok and verification.kind != "trivial" and fallback is not None:
        verification = verification.model_copy(update={"kind": "no_offline_repair", "reason": "; ".join(refused)})
    return verification.model_copy(update={"seconds": seconds, "changed_paths": changed_paths, "solution": script,
                                           "refused": refused})


def _repeats_differ(runs: Iterable[TestRun], selected: list[str], f2p: list[str]) -> Verification | None:
    """Why the first of ``runs`` with nothing done that does not fail exactly ``f2p`` of
    ``selected`` refutes the state (None when every run does)."""
    for again in runs:
        failing = set(again.failing(selected))
        if not failing & set(f2p):
            return _failed("trivial", "with nothing done the F2P tests pass")
        if failing != set(f2p):
            extra, gone = sorted(failing - set(f2p)), sorted(set(f2p) - failing)
            return _failed("not_reproducible", f"a repeat run differs: {len(extra)} more failing {extra[:3]}, "
                                               f"{len(gone)} now passing {gone[:3]}")
    return None


def verifier_check(runtime: Runtime, gold: GoldEnv, image: str, f2p: list[str], p2p: list[str],
                   selected: list[str], solution: str, timeout: float = 900,
                   state: SystemState | None = None, store: ReferenceStore | None = None) -> Verification:
    """(b) and (e): the solution, then the selected tests in its container, all pass (else
    ``not_solvable``); the exported task's verifier, built from gold as the export will
    build it, then judges that container: reward 1 (else ``not_solvable``: the repair leaves
    something the verifier refuses), and reward 0 for the broken image with nothing done
    (else the verifier repairs the state by itself, e.g. by restoring gold's test files, and
    the state is ``trivial``)."""
    reference, pristine = gather(runtime, gold.image, instance_id="candidate", workdir=gold.workdir,
                              test_command=gold.test_command, f2p=f2p, p2p=p2p, order=selected, state=state,
                              store=store)
    judged = judge_image(runtime, image, reference, pristine, solution, gold, selected, timeout)
    if judged.fixed.exit_code != 0:
        return _failed("not_solvable", f"the solution exited {judged.fixed.exit_code}: "
                                       f"{judged.fixed.output.strip()[-200:]}")
    still = sorted(judged.repaired.failing(selected))
    if still:
        return _failed("not_solvable", f"{len(still)} tests still fail after the solution: {still[:3]}",
                       still_failing=still)
    solved = judged.solved or ModeResult(reward=None)  # judged: the solution and every test passed
    for result, want, when, kind in ((judged.nothing, 0, "with nothing done", "trivial"),
                                     (solved, 1, "after the solution", "not_solvable")):
        if result.reward != want:
            return _failed(kind, f"the task's verifier gives reward {result.reward} {when} {result.detail}".strip())
    return Verification(ok=True)


def recheck_task(runtime: Runtime, gold: GoldEnv, gold_listing: Listing, task) -> Verification:
    """Re-check a saved Task from scratch: a fresh build of gold + ΔD, two runs
    failing exactly F2P, a clean leak scan, and a working solution."""
    tag = ImageKind.RECHECK.tag("", uuid.uuid4().hex[:12])
    try:
        try:
            build_broken(runtime, gold, task.dockerfile, tag)
        except BuildFailed as exc:
            return Verification(ok=False, kind="build_failed", reason=str(exc))
        return check_broken_state(
            runtime, gold, gold_listing, tag, task.FAIL_TO_PASS, task.PASS_TO_PASS, task.solution, repeats=2,
            order=run_order(task), state=task.state,
        )
    finally:
        runtime.remove_image(tag)
