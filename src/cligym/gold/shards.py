"""A gold suite within a time budget: its test files run in parallel shards (one container
each), and a suite too long for the budget keeps a seeded sample of its files, stratified
by package so that every package of the project is represented.

The first pass (``first_pass``) collects the suite (``cligym.gold.collection``), runs a pilot
of files (one of each package first, in a seeded order) to learn what a test costs, and
then as many of the other files as the budget's share for one run allows. The later runs
(``cligym.gold.suite.record_suite``) run the kept files only; what was left out is recorded,
with why, in the gold record's ``SuiteSample``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cligym.config import SUITE_BUDGET, SUITE_SHARDS
from cligym.gold.collection import COLLECT_CAP, Collected, collect, listed
from cligym.gold.sampling import package_of, split_led, stratified, weight_of
from cligym.harness.images import at_once
from cligym.harness.testrun import run_tests
from cligym.models.gold import GoldEnv, SuiteSample
from cligym.models.testrun import TestRun
from cligym.runtime import Runtime
from cligym.ui import Reporter

#: Files of each shard the pilot runs (the first of the seeded order: each of another
#: package while there are packages left); later rounds take what the pilot's cost says fits.
PILOT_FILES = 2
#: The pilot's deadline is the budget over this.
PILOT_SHARE = 16


def merged(runs: Sequence[TestRun], seconds: float) -> TestRun:
    """One run of the shards' runs: their results together (a shard that wrote no report
    adds none: its tests are missing), ``seconds`` the wall time they took at once."""
    results = {}
    for run in runs:
        results.update(run.results)
    failed = next((r.exit_code for r in runs if r.exit_code), 0)
    return TestRun(exit_code=failed if all(r.exit_code is not None for r in runs) else None,
                   timed_out=any(r.timed_out for r in runs), seconds=seconds,
                   report_found=any(r.report_found for r in runs), results=results,
                   output_tail="\n".join(r.output_tail for r in runs)[-8000:])


#: What coreutils' ``timeout`` exits with when its deadline came first.
DEADLINE_EXIT = 124


#: What the shell reports for a test command the kernel killed (SIGKILL: in a gold run, the
#: container's memory limit, which one process running thousands of a huge suite's tests
#: can reach), and how many times such a shard is cut in two and run again.
KILLED_EXIT = 137
KILLED_HALVINGS = 3


def sharded_run(runtime: Runtime, gold: GoldEnv, chunks: Sequence[Sequence[str]], timeout: float, *,
                by_id: bool = False, deadline: float | None = None,
                at_a_time: int | None = None) -> tuple[TestRun, list[TestRun]]:
    """Each chunk (of test files, or of node ids ``by_id``) run in its own fresh container,
    all at once; the merged run and each shard's. With ``deadline``, pytest is interrupted
    ``deadline`` seconds after the call as Ctrl-C would (its report then holds the tests run
    so far, and the shard exits ``DEADLINE_EXIT``; a chunk whose turn comes after the
    deadline is not started, and exits so with no report); without, a shard the kernel
    killed is run again in halves (``KILLED_EXIT``). ``at_a_time``: at most so many
    containers at once (the chunks in waves)."""
    started = time.monotonic()

    def one(chunk: Sequence[str], seconds: float | None = None) -> Callable[[], TestRun]:
        command, limit = gold.test_command, timeout
        if seconds is not None:
            interrupt = f"timeout -s INT -k 30 {max(1, int(seconds))}"  # where the image has coreutils' timeout
            command = f'$(command -v timeout >/dev/null 2>&1 && echo "{interrupt}") {command}'
            limit = seconds + 90
        if by_id:
            return lambda: run_tests(runtime, gold.image, gold.workdir, command, chunk, timeout=limit)
        return lambda: run_tests(runtime, gold.image, gold.workdir, command, paths=chunk, timeout=limit)

    wave = at_a_time or len(chunks) or 1
    runs: list[TestRun] = []
    for i in range(0, len(chunks), wave):
        left = None if deadline is None else deadline - (time.monotonic() - started)
        if left is not None and left < 1:
            runs += [TestRun(exit_code=DEADLINE_EXIT, seconds=0.0, report_found=False,
                             output_tail="not started: the deadline came first") for _ in chunks[i:i + wave]]
            continue
        runs += at_once(runtime, [one(c, left) for c in chunks[i:i + wave]])
    if deadline is None:  # (a run with a deadline cuts what did not finish instead)
        runs = [part for chunk, run in zip(chunks, runs, strict=True)
                for part in _halved_if_killed(runtime, one, chunk, run, KILLED_HALVINGS)]
    return merged(runs, time.monotonic() - started), runs


def _halved_if_killed(runtime: Runtime, one: Callable[[Sequence[str]], Callable[[], TestRun]], chunk: Sequence[str],
                      run: TestRun, halvings: int) -> list[TestRun]:
    """``run`` of ``chunk``; when the kernel killed it, the runs of its two halves instead
    (both at once, each halved again while killed, ``halvings`` times)."""
    if run.exit_code != KILLED_EXIT or len(chunk) < 2 or halvings <= 0:
        return [run]
    halves = [chunk[: len(chunk) // 2], chunk[len(chunk) // 2:]]
    again = at_once(runtime, [one(half) for half in halves])
    return [part for half, rerun in zip(halves, again, strict=True)
            for part in _halved_if_killed(runtime, one, half, rerun, halvings - 1)]


@dataclass
class Budget:
    """How a gold suite is run: ``seconds`` for all its runs together, ``shards`` containers
    per run, ``seed`` for the sample of files when the suite does not fit."""

    seconds: float = SUITE_BUDGET
    shards: int = SUITE_SHARDS
    seed: int = 0


def first_pass(runtime: Runtime, gold: GoldEnv, test_paths: list[str], budget: Budget,
               reporter: Reporter, *, spent: float = 0.0,
               stop: Callable[[TestRun], bool] | None = None) -> tuple[TestRun, SuiteSample] | None:
    """The suite's first run, in rounds, while the budget (less its reserve: ``RESERVE_SHARE``)
    holds them and the repeats of what they ran (``_Cost.repeats``): the pilot (the first
    files of the seeded order, which takes a file of each package before a second of any),
    then rounds of the next files estimated to fit, each at most about twice as long as the
    one before (a round that overruns loses only its own files; those of a package none of
    whose files has finished run once more, first in the next round: ``_again``; when no
    round is left, in a last one of their own within the reserve). The merged run (in
    collection order) and the sample record; None when neither collection nor a listing
    names a file (the caller runs the suite whole). ``spent``: seconds of the budget already
    gone (an earlier build's pass); ``stop``: asked of the run so far after each round, True
    ends the pass there (the run asks for a repair, whose build makes the rest of it moot)."""
    started = time.monotonic() - spent
    with reporter.task("collecting the test suite"):
        found = collect(runtime, gold, test_paths, timeout=COLLECT_CAP)
        if not found.files:  # a collection that takes this long (a huge suite), or printed in another way
            found = listed(runtime, gold, test_paths)
    if not found.files:
        return None
    order = stratified(list(found.files), budget.seed, found.files)
    reserve = budget.seconds / RESERVE_SHARE
    rounds = _Rounds(runtime, gold, found)
    batch = order[:PILOT_FILES * budget.shards]
    stopped = False
    while batch:
        allowance = budget.seconds - reserve - (time.monotonic() - started) - rounds.repeats(budget.shards)
        if allowance <= 0 and rounds.runs:
            break  # (the pilot runs whatever the budget: a gold needs some tests)
        guess = rounds.cost.round_seconds(batch, found.files, budget.shards) if rounds.runs \
            else budget.seconds / PILOT_SHARE
        what = "the pilot" if not rounds.runs else "the next round"
        with reporter.task(f"running {len(batch)} of {len(order)} test files ({what})"):
            newly = rounds.run(batch, budget.shards, max(30.0, min(allowance, 2 * guess + 30)))
        if stop is not None and stop(merged(rounds.runs, 0.0)):
            stopped = True
            break
        again = rounds.again(newly)
        left = again + [f for f in order if f not in set(rounds.ran) and f not in again]
        allowance = budget.seconds - reserve - (time.monotonic() - started) - rounds.repeats(budget.shards)
        batch = rounds.cost.fitting(left, found.files, budget.shards, min(allowance, 2 * rounds.runs[-1].seconds + 10))
    last = [] if stopped else rounds.uncovered(order)
    if last:  # packages a round's deadline cut whole, and no round left for them: the reserve's (30 s at least)
        with reporter.task(f"running {len(last)} test files, each the first of a package a deadline cut"):
            rounds.run(last, budget.shards, max(30.0, min(reserve, budget.seconds - (time.monotonic() - started))))
    return rounds.record(order, budget, time.monotonic() - started)


#: The share of the gold budget the first pass keeps for a last round of its own for the
#: files of packages a round's deadline cut whole (``first_pass``); unused, the repeats get it.
RESERVE_SHARE = 7


class _Rounds:
    """The rounds of a first pass so far: their runs, the files they ran, those a deadline
    cut (with why), what they say a file costs, and the most files a shard ran to its end."""

    def __init__(self, runtime: Runtime, gold: GoldEnv, found: Collected) -> None:
        self.runtime, self.gold, self.found = runtime, gold, found
        self.runs: list[TestRun] = []
        self.ran: list[str] = []
        self.cut: dict[str, str] = {}
        self.cost = _Cost()
        self.most: int | None = None
        self.retried: set[str] = set()

    def repeats(self, shards: int) -> float:
        return self.cost.repeats([f for f in self.ran if f not in self.cut], self.found.files, shards)

    def run(self, batch: Sequence[str], shards: int, deadline: float) -> list[str]:
        """A round of ``batch`` within ``deadline``, the files of packages none of which has
        run yet leading every shard; the files its deadline cut (those never started first)."""
        whole = self._whole()
        chunks = split_led(batch, {f for f in batch if package_of(f) not in whole}, self.found.files, shards)
        run, shard_runs = sharded_run(self.runtime, self.gold, chunks, 0, deadline=deadline)
        self.runs.append(run)
        self.ran += batch
        newly: list[str] = []
        counts = self.found.files if self.found.found_by == "collection" else None
        for chunk, shard in zip(chunks, shard_runs, strict=True):
            left_in = unfinished(chunk, shard, counts)
            for path in left_in:
                self.cut[path] = "the first run's deadline came before its shard finished it"
            newly += left_in[1:] + left_in[:1]  # the one the deadline caught last: those after it never started
            if shard.report_found and shard.exit_code not in (DEADLINE_EXIT, KILLED_EXIT):
                self.most = max(self.most or 0, len(chunk))
        self.cost.add(chunks, shard_runs, self.found.files)
        return newly

    def _whole(self) -> set[str]:
        """The packages a file of which has run to its end with a report."""
        reported = {node.split("::")[0] for r in self.runs for node in r.results}
        return {package_of(f) for f in self.ran if f not in self.cut and f in reported}

    def again(self, newly: Sequence[str]) -> list[str]:
        """Of the files a round cut (``newly``), those to run once more (``_again``), taken
        out of what ran (their run again says what they do)."""
        again = _again(newly, self.cut, self.retried, self._whole())
        if again:
            self.ran = [f for f in self.ran if f not in again]
            self.runs = [r.of_files(again, but=True) for r in self.runs]
        return again

    def uncovered(self, order: Sequence[str]) -> list[str]:
        """For each package whose only files were cut and are to run once more, the first
        of them in ``order`` (its lightest): what a last round runs."""
        waiting, whole, out = self.retried - set(self.ran), self._whole(), {}
        for path in order:
            if path in waiting and package_of(path) not in whole:
                out.setdefault(package_of(path), path)
        return list(out.values())

    def record(self, order: Sequence[str], budget: Budget, seconds: float) -> tuple[TestRun, SuiteSample]:
        """The merged first run (of the kept files, in collection order) and the sample."""
        found, ran = self.found, set(self.ran)
        why = {path: f"not sampled: the suite's runs would exceed the gold budget of {budget.seconds:.0f} s"
               for path in order if path not in ran}
        first = merged(self.runs, seconds)
        reported = {node.split("::")[0] for node in first.results} | set(found.errors)
        for path in self.ran:
            if path in self.cut:
                why[path] = self.cut[path]
            elif path not in reported:
                why[path] = "its shard of the first run reported nothing (pytest wrote no report)"
        kept = [f for f in found.files if f not in why]  # the suite's own order
        estimated = self.cost.whole(order, found.files) if self.runs else None
        sample = SuiteSample(budget_seconds=budget.seconds, shards=budget.shards, seed=budget.seed,
                             files=len(found.files), tests=found.tests, found_by=found.found_by, kept_files=kept,
                             left_out_files=why, packages=len({package_of(f) for f in order}),
                             kept_packages=len({package_of(f) for f in kept}),
                             estimated_seconds=round(estimated, 1) if estimated is not None else None,
                             shard_files=self.most)
        return _in_order(first, kept), sample


def _again(newly: Sequence[str], cut: dict[str, str], retried: set[str], whole: set[str]) -> list[str]:
    """Of the files a round's deadline cut (``newly``: those that never started first), those
    of a package none of whose files has run to its end with a report (``whole`` holds
    those that have), each once (taken out of ``cut`` and added to ``retried``): they go
    first into the next round. An engine under load overruns a round's estimate, and the
    files it cuts are, in the stratified order, packages' first: without another run, such
    a package would be left out of the sample whole."""
    again = [f for f in newly if f not in retried and package_of(f) not in whole]
    for path in again:
        del cut[path]
    retried.update(again)
    return again


@dataclass
class _Cost:
    """What the rounds so far say a file costs: its share of what a shard spends beyond its
    tests (the container's and pytest's start, and importing the file's module and what it
    imports: in a large project most of a file's cost), and its tests' seconds by weight (a
    collected test, or a kB of test file). A shard its deadline cut counts whole as tests."""

    files: int = 0
    overhead: float = 0.0
    test_seconds: float = 0.0
    weight: float = 0.0

    def add(self, chunks: Sequence[Sequence[str]], shard_runs: Sequence[TestRun], weights: dict[str, float]) -> None:
        for chunk, run in zip(chunks, shard_runs, strict=True):
            cut = run.exit_code == DEADLINE_EXIT or run.timed_out or not run.report_found
            tests = run.seconds if cut else sum(r.seconds for r in run.results.values())
            self.overhead += max(0.0, run.seconds - tests)
            self.test_seconds += tests
            self.files += len(chunk)
            self.weight += sum(weight_of(weights, f) for f in chunk)

    def file_seconds(self, path: str, weights: dict[str, float]) -> float:
        per_file = self.overhead / self.files if self.files else 0.0
        per_weight = self.test_seconds / self.weight if self.weight else 0.0
        return per_file + per_weight * weight_of(weights, path)

    def round_seconds(self, files: Sequence[str], weights: dict[str, float], shards: int) -> float:
        return sum(self.file_seconds(f, weights) for f in files) / max(1, min(shards, len(files)))

    def repeats(self, files: Sequence[str], weights: dict[str, float], shards: int) -> float:
        """What the runs after the first pass will take for ``files``: a run of them, and the
        run by node id beside it (twice the work on the same cores), with a margin."""
        return 2.5 * self.round_seconds(files, weights, shards) if files else 0.0

    def whole(self, files: Sequence[str], weights: dict[str, float]) -> float:
        """One run of ``files`` in one container."""
        return sum(self.file_seconds(f, weights) for f in files)

    def fitting(self, files: Sequence[str], weights: dict[str, float], shards: int, allowance: float) -> list[str]:
        """Those of ``files``, in their order, estimated to run within ``allowance`` split
        between ``shards`` (a file too costly for what is left is passed over)."""
        room = allowance * shards
        take = []
        for path in files:
            need = self.file_seconds(path, weights)
            if need <= room:
                take.append(path)
                room -= need
        return take


def unfinished(chunk: Sequence[str], shard: TestRun, counts: dict[str, float] | None = None) -> list[str]:
    """The files of ``chunk`` a shard its deadline interrupted did not finish: with the
    collection's ``counts``, those with fewer results than tests; else the file of its last
    reported test and those after it (pytest runs the files in the order given)."""
    if shard.exit_code != DEADLINE_EXIT and not shard.timed_out:
        return []
    files = list(chunk)
    if counts is not None:
        done: dict[str, int] = {}
        for node in shard.results:
            done[node.split("::")[0]] = done.get(node.split("::")[0], 0) + 1
        return [f for f in files if done.get(f, 0) < counts.get(f, 0) or f not in done]
    last = next(reversed(shard.results), None) if shard.results else None
    index = files.index(last.split("::")[0]) if last and last.split("::")[0] in files else 0
    return files[index:]


def _in_order(run: TestRun, files: Sequence[str]) -> TestRun:
    """``run`` with the results of ``files`` only, in their order (the suite's collection order)."""
    rank = {f: i for i, f in enumerate(files)}
    kept = [item for item in run.results.items() if item[0].split("::")[0] in rank]
    ordered = sorted(kept, key=lambda item: rank[item[0].split("::")[0]])
    return run.model_copy(update={"results": dict(ordered)})
