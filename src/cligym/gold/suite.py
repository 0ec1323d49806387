"""Running a gold suite several times and recording which tests pass every time, and why
the others do not."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from cligym.errors import GoldFailed
from cligym.gold.diagnose import collection_errors, decisive_lines, why_left_out
from cligym.gold.sampling import chunks_of, package_of
from cligym.gold.shards import DEADLINE_EXIT, sharded_run, unfinished
from cligym.harness.images import side_by_side
from cligym.harness.testrun import run_tests
from cligym.models.gold import GoldEnv, SuiteSample
from cligym.models.testrun import TestRun
from cligym.runtime import Runtime
from cligym.ui import Reporter


def classify(runs: list[TestRun]) -> dict[str, list[str]]:
    """Split node ids by their outcomes over several runs, in the order the suite ran them
    (some suites depend on that order, so subsets are later run in it too)."""
    every: dict[str, None] = {}
    for run in runs:
        every.update(dict.fromkeys(run.results))
    out: dict[str, list[str]] = {"tests": [], "flaky": [], "failing": [], "skipped": []}
    for node in every:
        outcomes = [r.results[node].outcome if node in r.results else "missing" for r in runs]
        if all(o == "passed" for o in outcomes):
            out["tests"].append(node)
        elif all(o == "skipped" for o in outcomes):
            out["skipped"].append(node)
        elif any(o == "passed" for o in outcomes):
            out["flaky"].append(node)
        else:
            out["failing"].append(node)
    return out


def suite_run(runtime: Runtime, gold: GoldEnv, test_paths: list[str], timeout: float,
              weights: dict[str, float] | None = None, deadline: float | None = None,
              files: Sequence[str] | None = None) -> Ran:
    """One run of the suite (of ``test_paths``); with a sample record in ``gold.suite``, of
    its kept files (or of ``files`` of them), split between its shards (``weights``: the
    seconds each file took before; in more chunks, run that many at a time, where one would
    hold more files than a container of the first pass ran: ``chunks_of``), within
    ``deadline`` when given."""
    if gold.suite is not None:
        chunks = chunks_of(gold.suite.kept_files if files is None else files, weights or {}, gold.suite)
        run, shards = sharded_run(runtime, gold, chunks, timeout, at_a_time=gold.suite.shards, deadline=deadline)
        return Ran(run, _cut(chunks, shards, by_id=False) if deadline is not None else {})
    return Ran(run_tests(runtime, gold.image, gold.workdir, gold.test_command, paths=test_paths, timeout=timeout))


#: Why a test the whole suite runs is left out when naming its node id does not run it:
#: every later run (a broken state, the solution, the verifier) selects tests by id.
UNSELECTABLE = "pytest does not run it when given its node id"


def selection_run(runtime: Runtime, gold: GoldEnv, first: TestRun, timeout: float,
                  deadline: float | None = None) -> Ran:
    """The tests that passed in ``first``, run by their node ids, as every later stage runs
    them: an id rebuilt wrongly from the report comes back ``missing`` (split between the
    shards by file, with a sample record; within ``deadline`` when given)."""
    passed = [n for n in first.results if first.passes(n)]
    if not passed:  # (no id to name: pytest given none would run the whole suite)
        return Ran(TestRun(exit_code=0, seconds=0.0, report_found=True))
    if gold.suite is not None and gold.suite.shards > 1:
        by_file: dict[str, list[str]] = {}
        for node in passed:
            by_file.setdefault(node.split("::")[0], []).append(node)
        weights = {path: float(len(ids)) for path, ids in by_file.items()}
        chunks = [[n for path in part for n in by_file[path]] for part in chunks_of(list(by_file), weights, gold.suite)]
        run, shards = sharded_run(runtime, gold, chunks, timeout, by_id=True, at_a_time=gold.suite.shards,
                                  deadline=deadline)
        return Ran(run, _cut(chunks, shards, by_id=True) if deadline is not None else {})
    return Ran(run_tests(runtime, gold.image, gold.workdir, gold.test_command, passed, timeout=timeout))


@dataclass
class Ran:
    """A run of the suite, and the files it did not finish (within its deadline), with why."""

    run: TestRun
    cut: dict[str, str] = field(default_factory=dict)


#: Seconds a repeat run gets at least, whatever is left of its deadline.
REPEAT_FLOOR = 30.0
#: Why a kept file leaves the sample after the first pass.
REPEAT_DEADLINE = "a repeat run's deadline (what was left of the gold budget) came before its shard finished it"
REPEAT_SILENT = "its shard of a repeat run reported nothing (pytest wrote no report)"


def _cut(chunks: Sequence[Sequence[str]], shards: Sequence[TestRun], *, by_id: bool) -> dict[str, str]:
    """The files of ``chunks`` (of files, or of node ids ``by_id``) their shards did not
    finish: every file of a shard that wrote no report, or, of one its deadline
    interrupted, the files it did not reach (``unfinished``; by id: of the ids it did not report)."""
    out: dict[str, str] = {}
    for chunk, shard in zip(chunks, shards, strict=True):
        files = list(dict.fromkeys(item.split("::")[0] for item in chunk))
        late = shard.exit_code == DEADLINE_EXIT or shard.timed_out
        if not shard.report_found:  # (a shard whose turn came after the deadline was not started)
            out.update(dict.fromkeys(files, REPEAT_DEADLINE if late else REPEAT_SILENT))
        elif by_id and late:
            out.update(dict.fromkeys((n.split("::")[0] for n in chunk if n not in shard.results), REPEAT_DEADLINE))
        elif not by_id:
            out.update(dict.fromkeys(unfinished(chunk, shard), REPEAT_DEADLINE))
    return out


def file_seconds(run: TestRun) -> dict[str, float]:
    """What each test file's tests took in ``run`` (the weights of a later split)."""
    out: dict[str, float] = {}
    for node, result in run.results.items():
        path = node.split("::")[0]
        out[path] = out.get(path, 0.0) + result.seconds
    return out


def record_suite(
    runtime: Runtime, gold: GoldEnv, test_paths: list[str], runs: int, timeout: float, reporter: Reporter,
    first: TestRun | None = None, deadline: float | None = None,
) -> None:
    """Run the suite ``runs`` times (``first``, when given, is the first run; with two or
    more, the last run names the tests that passed in the first by node id; with three or
    more, the last two run at once, so that a test which passes only on an idle machine shows
    as flaky) and record the outcome in ``gold``; GoldFailed when nothing was collected or
    nothing passed. ``deadline``: the seconds all the runs after ``first`` get, with a sample
    record in ``gold.suite``; a kept file a repeat did not finish leaves the sample, with why
    (its tests ran too few times to say whether they pass every time), unless it was the last
    of its package: those are run again, every repeat of them, in a rescue with a deadline
    of ``RESCUE_SECONDS`` beyond the first (``_rescue``)."""
    if first is not None:
        _collected_some(first, gold)  # no point in running again a suite that collected nothing
    with reporter.task(f"running the test suite {runs} times", total=runs):
        repeats = _repeats(runtime, gold, test_paths, runs, timeout, first, deadline, reporter.advance)
    if repeats.cut and gold.suite is not None and first is not None:
        repeats = _rescue(runtime, gold, test_paths, runs, timeout, first, repeats, reporter)
    results, selected, cut = repeats.results, repeats.selected, repeats.cut
    if cut and gold.suite is not None:
        results = [run.of_files(cut, but=True) for run in results]
        selected = selected.of_files(cut, but=True) if selected is not None else None
        _leave_out(gold.suite, cut)
    first = results[0]
    _collected_some(first, gold)
    groups = classify(results)
    unselectable = _demote(groups, selected)
    if not groups["tests"]:
        sample = next((r.message for r in first.results.values() if r.message), "")
        raise GoldFailed(
            f"no test passed in the gold environment ({len(first.results)} collected); first error: "
            f"{decisive_lines(sample or first.output_tail)[:400] or 'none reported'}"
        )
    gold.runs = runs
    gold.tests = groups["tests"]
    gold.flaky = groups["flaky"]
    gold.failing = groups["failing"]
    gold.skipped = groups["skipped"]
    gold.left_out = {n: why_left_out(first.results[n].message) for n in [*gold.failing, *gold.skipped]
                     if n in first.results}
    gold.left_out.update(collection_errors(first.output_tail))  # whole modules: no ids to name
    gold.left_out.update(dict.fromkeys(unselectable, UNSELECTABLE))
    results += [selected] if selected is not None else []
    gold.test_seconds = [round(r.seconds, 3) for r in results]
    gold.durations = {
        n: round(sum(r.results[n].seconds for r in results if n in r.results) / len(results), 4)
        for n in gold.tests
    }


@dataclass
class _Repeats:
    """The suite's runs (the first one first), the run by node id, and the files the
    repeats' deadline cut, with why."""

    results: list[TestRun]
    selected: TestRun | None
    cut: dict[str, str]


def _repeats(runtime: Runtime, gold: GoldEnv, test_paths: list[str], runs: int, timeout: float,
             first: TestRun | None, deadline: float | None, advance: Callable[[], None],
             files: Sequence[str] | None = None) -> _Repeats:
    """The runs of ``record_suite`` (of ``files`` of the sample, when given: ``first`` then
    holds their results only), ``advance`` called after each."""
    results: list[TestRun] = [first] if first is not None else []
    selected: TestRun | None = None
    cut: dict[str, str] = {}
    weights = file_seconds(first) if first is not None else {}
    started = time.monotonic()

    def left() -> float | None:  # (a later repeat of more than three runs gets REPEAT_FLOOR at least)
        return None if deadline is None else max(deadline - (time.monotonic() - started), REPEAT_FLOOR)

    if first is not None:
        advance()
    while len(results) + (selected is not None) < runs:
        if len(results) == runs - 2 and results and results[0].results:
            # the last two runs at once: a test that passes only on an idle machine (a
            # timing test) fails in one of them and is flaky here, not a gold test
            # whose task would fail validation under load
            until = left()
            again, by_id = side_by_side(
                runtime, partial(suite_run, runtime, gold, test_paths, timeout, weights, until, files),
                partial(selection_run, runtime, gold, results[0], timeout, until))
            results.append(again.run)
            selected = by_id.run
            cut |= again.cut | by_id.cut
            advance()
        elif len(results) == runs - 1 and results[0].results:
            by_id = selection_run(runtime, gold, results[0], timeout, left())
            selected, cut = by_id.run, cut | by_id.cut
        else:
            again = suite_run(runtime, gold, test_paths, timeout, weights, left(), files)
            results.append(again.run)
            cut |= again.cut
        advance()
    return _Repeats(results, selected, cut)


#: Seconds the rescue of the files a repeat's deadline would leave their packages without
#: gets, beyond the gold budget: every package represented comes before the budget.
RESCUE_SECONDS = 60.0


def _rescue(runtime: Runtime, gold: GoldEnv, test_paths: list[str], runs: int, timeout: float, first: TestRun,
            repeats: _Repeats, reporter: Reporter) -> _Repeats:
    """``repeats`` with the cut files that were the last kept of their package (``_orphans``)
    run again, every repeat of them, with a deadline of ``RESCUE_SECONDS`` (a series of more
    than three runs gives each later one ``REPEAT_FLOOR`` at least): those the rescue finishes
    keep its results and stay in the sample."""
    assert gold.suite is not None
    lost = _orphans(gold.suite.kept_files, repeats.cut, first)
    if not lost:
        return repeats
    with reporter.task(f"running again {len(lost)} test files, each its package's last, a repeat did not finish"):
        again = _repeats(runtime, gold, test_paths, runs, timeout, first.of_files(lost), RESCUE_SECONDS,
                         lambda: None, files=lost)
    rescued = [f for f in lost if f not in again.cut]
    results = [repeats.results[0], *(_replaced(run, more, lost, rescued)
                                     for run, more in zip(repeats.results[1:], again.results[1:], strict=True))]
    selected = repeats.selected
    if selected is not None and again.selected is not None:
        selected = _replaced(selected, again.selected, lost, rescued)
    return _Repeats(results, selected, {f: why for f, why in repeats.cut.items() if f not in rescued})


def _replaced(run: TestRun, rescue: TestRun, lost: Sequence[str], rescued: Sequence[str]) -> TestRun:
    """``run`` with the results of ``lost`` files replaced by those its ``rescue`` has of the
    ``rescued`` ones, and the rescue's seconds added."""
    results = {**run.of_files(lost, but=True).results, **rescue.of_files(rescued).results}
    return run.model_copy(update={"results": results, "seconds": run.seconds + rescue.seconds})


def _orphans(kept: Sequence[str], cut: dict[str, str], first: TestRun) -> list[str]:
    """The files of ``cut`` whose package keeps no file of ``kept`` that is not cut, and
    with a test that passed in ``first`` (a file of none would give no gold test), in
    ``kept``'s order."""
    whole = {package_of(f) for f in kept if f not in cut}
    passing = {node.split("::")[0] for node in first.results if first.passes(node)}
    return [f for f in kept if f in cut and package_of(f) not in whole and f in passing]


def _leave_out(sample: SuiteSample, cut: dict[str, str]) -> None:
    """Take ``cut``'s files out of ``sample``'s kept files, recording why."""
    sample.kept_files = [f for f in sample.kept_files if f not in cut]
    sample.left_out_files |= {f: why for f, why in cut.items() if f not in sample.left_out_files}
    sample.kept_packages = len({package_of(f) for f in sample.kept_files})


def _collected_some(first: TestRun, gold: GoldEnv) -> None:
    """GoldFailed when the first run collected no test."""
    if not first.report_found or not first.results:
        why = "timed out" if first.timed_out else f"exit code {first.exit_code}"
        raise GoldFailed(f"the test command collected no tests in {gold.image} ({why}): "
                         f"{decisive_lines(first.output_tail)[-600:]}")


def _demote(groups: dict[str, list[str]], selected: TestRun | None) -> list[str]:
    """Take out of ``groups["tests"]`` what did not pass when selected by id: ``missing``
    ones (returned: pytest cannot select them) and the others (now flaky)."""
    if selected is None:
        return []
    outcome = {n: r.outcome for n, r in selected.results.items()}
    unselectable = [n for n in groups["tests"] if outcome.get(n, "missing") == "missing"]
    flaky = [n for n in groups["tests"] if outcome.get(n, "missing") not in ("passed", "missing")]
    groups["tests"] = [n for n in groups["tests"] if outcome.get(n) == "passed"]
    groups["flaky"] += flaky
    return unselectable
