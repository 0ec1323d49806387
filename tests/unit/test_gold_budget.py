"""Everything a sampled gold suite runs counts against one time budget: a first pass after
a repair build gets only what is left, a first pass stops at the round that asks for a
repair, and the repeats run within a deadline that cuts, file by file, what they did not
finish instead of running over (an engine under another worker's load runs them slower
than the pilot said)."""

from __future__ import annotations

import re
import threading
from types import SimpleNamespace

from cligym.gold import collection, shards, suite
from cligym.models.gold import SuiteSample
from cligym.models.testrun import TestResult, TestRun
from cligym.ui import Reporter
from tests.unit.fake_engine import gold_env


class Clock:
    """A monotonic clock the fake test runs move on (thread-safe: shards run at once)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.lock = threading.Lock()

    def monotonic(self) -> float:
        with self.lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds


def _limit(command: str) -> int | None:
    found = re.search(r"timeout -s INT -k 30 (\d+)", command)
    return int(found.group(1)) if found else None


def _passing(items, suffix: str = "::t") -> dict[str, TestResult]:
    return {(i if "::" in i else i + suffix): TestResult(outcome="passed", seconds=1.0) for i in items}


def test_waves_share_one_deadline_and_a_wave_after_it_is_not_started(monkeypatch):
    clock = Clock()
    limits: list[int | None] = []

    def run_tests(runtime, image, workdir, command, node_ids=(), *, paths=(), timeout=0):
        limits.append(_limit(command))
        clock.advance(4)  # two at once: a wave moves the clock 8 s
        return TestRun(exit_code=0, seconds=4, report_found=True, results=_passing(paths))

    monkeypatch.setattr(shards, "run_tests", run_tests)
    monkeypatch.setattr(shards, "time", clock)
    gold = SimpleNamespace(image="gold", workdir="/testbed", test_command="python -m pytest")
    chunks = [[f"t{i}.py"] for i in range(8)]
    run, parts = shards.sharded_run(None, gold, chunks, 0, deadline=20, at_a_time=2)
    assert limits == [20, 20, 12, 12, 4, 4]  # each wave gets what is left of the one deadline
    assert [p.report_found for p in parts] == [True] * 6 + [False] * 2
    assert all(p.exit_code == shards.DEADLINE_EXIT for p in parts[6:])
    assert shards.unfinished(chunks[7], parts[7]) == chunks[7]
    assert run.passed() == {f"t{i}.py::t" for i in range(6)}


def _sampled_gold(kept: list[str]):
    tests = [f"{f}::t" for f in kept]
    gold = gold_env(tests)
    gold.suite = SuiteSample(budget_seconds=100, shards=2, seed=0, files=len(kept), tests=len(kept), packages=2,
                             kept_packages=2, kept_files=list(kept))
    first = TestRun(exit_code=0, seconds=5, report_found=True, results=_passing(kept))
    return gold, first


def _cutting(cut: set[str], limits: list[int | None]):
    """A fake test run whose shard is interrupted in the first of ``cut`` it holds."""
    def run_tests(runtime, image, workdir, command, node_ids=(), *, paths=(), timeout=0):
        limits.append(_limit(command))
        files = list(dict.fromkeys(item.split("::")[0] for item in [*paths, *node_ids]))
        stop = next((f for f in files if f in cut), None)
        if stop is not None:  # interrupted in that file: it and those after it unfinished
            done = files[: files.index(stop) + 1]
            return TestRun(exit_code=shards.DEADLINE_EXIT, seconds=9, report_found=True,
                           results=_passing([f for f in done if f != stop]) | _passing([stop], "::half"))
        return TestRun(exit_code=0, seconds=1, report_found=True, results=_passing([*paths, *node_ids]))
    return run_tests


def test_a_file_the_repeats_deadline_cut_leaves_the_sample_with_why(monkeypatch):
    kept = ["a.py", "c/d.py", "c/e.py"]
    gold, first = _sampled_gold(kept)
    limits: list[int | None] = []
    monkeypatch.setattr(shards, "run_tests", _cutting({"c/e.py"}, limits))
    suite.record_suite(None, gold, [], runs=3, timeout=200, reporter=Reporter(), first=first, deadline=30)
    assert len(limits) == 4 and all(limit is not None and limit <= 30 for limit in limits)  # no rescue: c keeps d
    assert gold.suite.kept_files == ["a.py", "c/d.py"] and gold.suite.kept_packages == 2
    assert set(gold.suite.left_out_files) == {"c/e.py"} and "deadline" in gold.suite.left_out_files["c/e.py"]
    # its tests ran too few times to be judged: neither gold tests nor flaky
    assert gold.tests == ["a.py::t", "c/d.py::t"] and gold.flaky == [] and gold.failing == []


def test_the_last_files_of_a_package_a_repeat_cut_run_again_and_those_that_finish_stay(monkeypatch):
    kept = ["a.py", "b.py", "c/d.py", "c/e.py"]
    gold, first = _sampled_gold(kept)
    limits: list[int | None] = []
    monkeypatch.setattr(shards, "run_tests", _cutting({"c/d.py"}, limits))
    suite.record_suite(None, gold, [], runs=3, timeout=200, reporter=Reporter(), first=first, deadline=30)
    # the repeats (a run of the files and one by id, two shards each) cut c/d.py and, after
    # it in its shard, c/e.py: package c had no file left; the rescue runs both again
    assert all(limit is not None and limit <= 30 for limit in limits[:4])
    assert len(limits) == 8 and all(limit is not None and 30 < limit <= suite.RESCUE_SECONDS for limit in limits[4:])
    assert gold.suite.kept_files == ["a.py", "b.py", "c/e.py"] and gold.suite.kept_packages == 2
    assert set(gold.suite.left_out_files) == {"c/d.py"} and "deadline" in gold.suite.left_out_files["c/d.py"]
    assert gold.tests == ["a.py::t", "b.py::t", "c/e.py::t"] and gold.flaky == [] and gold.failing == []


def test_a_cut_file_with_no_passing_test_is_not_rescued_and_no_run_names_no_test(monkeypatch):
    """A file whose tests all skipped in the first run gives no gold test: its package is not
    worth a rescue; and a run by id of no id (pytest would run the whole suite) is not made."""
    kept = ["a.py", "c/d.py"]
    gold, first = _sampled_gold(kept)
    first.results["c/d.py::t"] = TestResult(outcome="skipped", seconds=0.0)
    calls: list[tuple[list[str], list[str]]] = []
    cutting = _cutting({"c/d.py"}, [])

    def run_tests(runtime, image, workdir, command, node_ids=(), *, paths=(), timeout=0):
        calls.append((list(node_ids), list(paths)))
        return cutting(runtime, image, workdir, command, node_ids, paths=paths, timeout=timeout)

    monkeypatch.setattr(shards, "run_tests", run_tests)
    suite.record_suite(None, gold, [], runs=3, timeout=200, reporter=Reporter(), first=first, deadline=30)
    assert len(calls) == 3 and all(ids or paths for ids, paths in calls)  # two shards, and a.py's ids
    assert gold.suite.kept_files == ["a.py"] and gold.tests == ["a.py::t"]
    no_ids = suite.selection_run(None, gold, first.model_copy(update={"results": {}}), timeout=10)
    assert no_ids.run.results == {} and len(calls) == 3


def test_without_a_deadline_nothing_is_cut(monkeypatch):
    kept = ["a.py", "b.py", "c/d.py", "c/e.py"]
    gold, first = _sampled_gold(kept)
    monkeypatch.setattr(shards, "run_tests", lambda runtime, image, workdir, command, node_ids=(), *, paths=(),
                        timeout=0: TestRun(exit_code=0, seconds=1, report_found=True,
                                           results=_passing([*paths, *node_ids])))
    suite.record_suite(None, gold, [], runs=3, timeout=200, reporter=Reporter(), first=first)
    assert gold.suite.kept_files == kept and gold.suite.left_out_files == {}
    assert gold.tests == [f"{f}::t" for f in kept]


def _suite_of(files: int) -> collection.Collected:
    return collection.Collected(files={f"pkg{i % 4}/test_{i}.py": 3.0 for i in range(files)})


def _first_pass(monkeypatch, **options) -> list[list[str]]:
    """The rounds (the files each ran) of a first pass over 40 files, 1 s a file."""
    clock = Clock()
    rounds: list[list[str]] = []

    def run_tests(runtime, image, workdir, command, node_ids=(), *, paths=(), timeout=0):
        with clock.lock:
            if not rounds or rounds[-1] is None:
                rounds.append([])
        rounds[-1] += list(paths)
        clock.advance(len(paths) / 2)  # two shards at once
        return TestRun(exit_code=0, seconds=len(paths), report_found=True,
                       results={f"{p}::t{j}": TestResult(outcome="passed", seconds=0.3) for p in paths
                                for j in range(3)})

    real = shards.sharded_run

    def each_round(*args, **kwargs):
        result = real(*args, **kwargs)
        rounds.append(None)  # the round ended
        return result

    monkeypatch.setattr(shards, "collect", lambda *_args, **_kw: _suite_of(40))
    monkeypatch.setattr(shards, "run_tests", run_tests)
    monkeypatch.setattr(shards, "sharded_run", each_round)
    monkeypatch.setattr(shards, "time", clock)
    gold = SimpleNamespace(image="gold", workdir="/testbed", test_command="python -m pytest")
    shards.first_pass(None, gold, [], shards.Budget(seconds=100, shards=2), Reporter(), **options)
    return [r for r in rounds if r is not None]


def test_a_first_pass_after_a_repair_build_gets_only_what_is_left_of_the_budget(monkeypatch):
    whole = _first_pass(monkeypatch)
    assert len(whole) > 1 and sum(map(len, whole)) > shards.PILOT_FILES * 2
    late = _first_pass(monkeypatch, spent=100)
    assert late == whole[:1]  # the pilot only: a gold needs some tests, and nothing is left


def test_a_first_pass_stops_at_the_round_that_asks_for_a_repair(monkeypatch):
    asked: list[int] = []

    def stop(run: TestRun) -> bool:
        asked.append(len(run.results))
        return len(asked) == 2

    rounds = _first_pass(monkeypatch, stop=stop)
    assert len(rounds) == 2 and asked[1] == 3 * sum(map(len, rounds))  # asked of the run so far


def test_a_repair_build_and_everything_after_it_count_against_the_one_budget(monkeypatch):
    """The budget counts from the image's build; the first pass stops at the round asking
    for a requirement; the build with it and its pass get what is left of the budget, its
    pass (the last possible) runs to its end, and the repeats get the rest."""
    from cligym.gold import stage

    clock = Clock()
    passes: list[tuple[float, bool]] = []
    builds: list[dict[str, str]] = []
    repeats: list[float | None] = []

    def build(runtime, options, reporter, fixes):
        builds.append(dict(fixes))
        clock.advance(50)  # a repair build: inside the budget
        return stage._Built(gold=gold_env([]), test_paths=[], local=set())

    def first_pass(runtime, gold, paths, budget, reporter, *, spent=0.0, stop=None):
        passes.append((round(spent), stop is not None))
        clock.advance(40)
        run = TestRun(exit_code=0, seconds=40, report_found=True, results=_passing(["t.py"]))
        sample = SuiteSample(budget_seconds=budget.seconds, shards=2, seed=0, files=1, tests=1, packages=1,
                             kept_packages=1, kept_files=["t.py"])
        return run, sample

    def record_suite(runtime, gold, paths, runs, timeout, reporter, first=None, deadline=None):
        repeats.append(deadline)
        clock.advance(30)

    asks = iter([{"mod-a": "an import error"}, {"mod-b": "behind the first"}, {"mod-c": "behind the second"}, {}])
    monkeypatch.setattr(stage, "time", clock)
    monkeypatch.setattr(stage, "_build_from_project", build)
    monkeypatch.setattr(stage, "first_pass", first_pass)
    monkeypatch.setattr(stage, "record_suite", record_suite)
    monkeypatch.setattr(stage, "_wanted", lambda first, built, fixes: next(asks))
    options = stage._Options("fake==1.0", "base", None, False, False, 3, 600, shards.Budget(seconds=420))
    gold = stage._project_gold(None, options, Reporter())
    assert builds == [{}, {"mod-a": "an import error"}, {"mod-a": "an import error", "mod-b": "behind the first"},
                      {"mod-a": "an import error", "mod-b": "behind the first", "mod-c": "behind the second"}]
    # each pass is given the time already spent (the image's first build included, and the
    # passes and builds since); the last one, after which no build may follow, is not stopped
    assert passes == [(50, True), (140, True), (230, True), (320, False)]
    assert repeats == [420 - 360] and gold.suite.seconds == 390


def test_a_repeat_shard_not_started_for_the_deadline_is_cut_for_the_deadline_and_a_silent_one_as_such():
    not_started = TestRun(exit_code=shards.DEADLINE_EXIT, seconds=0, report_found=False)
    killed = TestRun(exit_code=shards.KILLED_EXIT, seconds=5, report_found=False)
    cut = suite._cut([["a.py"], ["b.py"]], [not_started, killed], by_id=False)
    assert cut == {"a.py": suite.REPEAT_DEADLINE, "b.py": suite.REPEAT_SILENT}


def _first_pass_of(monkeypatch, files: dict[str, float], run_tests, clock: Clock):
    """The first pass over ``files`` (a collection) with these test runs and clock: its run
    and sample, within a budget of 100 s in two shards."""
    monkeypatch.setattr(shards, "collect", lambda *_args, **_kw: collection.Collected(files=dict(files)))
    monkeypatch.setattr(shards, "run_tests", run_tests)
    monkeypatch.setattr(shards, "time", clock)
    gold = SimpleNamespace(image="gold", workdir="/testbed", test_command="python -m pytest")
    found = shards.first_pass(None, gold, [], shards.Budget(seconds=100, shards=2), Reporter())
    assert found is not None
    return found


def test_a_packages_only_file_a_rounds_deadline_cut_runs_once_more_first_in_the_next_round(monkeypatch):
    """Under load a round overruns its estimate and its deadline cuts files that were, in
    the stratified order, packages' first: such a file runs once more, first in the next
    round, so the sample keeps every package; a file cut twice is left out with why."""
    clock = Clock()
    rounds: list[list[str]] = []
    files = {f"pkg{i}/test_{i}.py": 3.0 for i in range(8)}
    slow = {"pkg6/test_6.py": 1, "pkg7/test_7.py": 2}  # cut this many times

    def run_tests(runtime, image, workdir, command, node_ids=(), *, paths=(), timeout=0):
        with clock.lock:
            rounds[-1].extend(paths)
        clock.advance(len(paths) / 2)
        done = []
        for path in paths:
            if slow.get(path, 0) > 0:
                slow[path] -= 1
                break  # the deadline came in this file
            done.append(path)
        return TestRun(exit_code=shards.DEADLINE_EXIT if len(done) < len(paths) else 0, seconds=len(paths),
                       report_found=True, results={f"{p}::t{j}": TestResult(outcome="passed", seconds=0.3)
                                                   for p in done for j in range(3)})

    real = shards.sharded_run

    def each_round(*args, **kwargs):
        rounds.append([])
        return real(*args, **kwargs)

    monkeypatch.setattr(shards, "sharded_run", each_round)
    _, sample = _first_pass_of(monkeypatch, files, run_tests, clock)
    ran = [path for round_ in rounds for path in round_]
    assert ran.count("pkg6/test_6.py") == 2 and ran.count("pkg7/test_7.py") == 2
    cut_in = next(i for i, round_ in enumerate(rounds) if "pkg6/test_6.py" in round_)
    retry = rounds[cut_in + 1]
    assert {"pkg6/test_6.py", "pkg7/test_7.py"} <= set(retry)
    # files a cut file held up never started: they run before the cut ones
    assert all(retry.index(f) < retry.index("pkg7/test_7.py") for f in retry if f not in slow)
    assert "pkg6/test_6.py" in sample.kept_files and sample.kept_packages == 7
    assert set(sample.left_out_files) == {"pkg7/test_7.py"}
    assert "deadline" in sample.left_out_files["pkg7/test_7.py"]


def test_a_retried_file_whose_second_run_reports_nothing_is_left_out_not_kept_on_its_first_runs_results(
        monkeypatch):
    """A file cut once keeps no result of that run: when its second run's shard is killed
    (no report), what it said the first time does not make it a gold file."""
    clock = Clock()
    files = {f"pkg{i}/test_{i}.py": 3.0 for i in range(4)}
    runs_of: dict[str, int] = {}

    def run_tests(runtime, image, workdir, command, node_ids=(), *, paths=(), timeout=0):
        clock.advance(len(paths) / 2)
        for path in paths:
            runs_of[path] = runs_of.get(path, 0) + 1
        if "pkg3/test_3.py" in paths and runs_of["pkg3/test_3.py"] == 1:  # cut after one of its tests
            done = [p for p in paths[:paths.index("pkg3/test_3.py")]]
            results = {f"{p}::t{j}": TestResult(outcome="passed", seconds=0.3) for p in done for j in range(3)}
            results["pkg3/test_3.py::t0"] = TestResult(outcome="passed", seconds=0.3)
            return TestRun(exit_code=shards.DEADLINE_EXIT, seconds=9, report_found=True, results=results)
        if "pkg3/test_3.py" in paths:  # the second time: killed, no report
            return TestRun(exit_code=shards.KILLED_EXIT, seconds=9, report_found=False)
        return TestRun(exit_code=0, seconds=len(paths), report_found=True,
                       results={f"{p}::t{j}": TestResult(outcome="passed", seconds=0.3) for p in paths
                                for j in range(3)})

    run, sample = _first_pass_of(monkeypatch, files, run_tests, clock)
    assert runs_of["pkg3/test_3.py"] >= 2
    assert "pkg3/test_3.py" not in sample.kept_files and "pkg3/test_3.py" in sample.left_out_files
    assert not any(node.startswith("pkg3/") for node in run.results)


def test_a_packages_only_file_cut_when_no_round_is_left_runs_in_a_last_round_within_the_reserve(monkeypatch):
    """A round that overruns until the budget has no room for another still leaves no
    package out: the files it cut that were their package's first run in a last round of
    their own, within the budget's reserve."""
    clock = Clock()
    rounds: list[tuple[list[str], float]] = []
    files = {f"pkg{i}/test_{i}.py": 3.0 for i in range(8)}
    cut = {"pkg6/test_6.py": 1}

    def run_tests(runtime, image, workdir, command, node_ids=(), *, paths=(), timeout=0):
        done = []
        for path in paths:
            if cut.get(path, 0) > 0:
                cut[path] -= 1
                clock.advance(90)  # the engine slowed down: this round eats the budget
                break
            done.append(path)
        clock.advance(len(done) / 2)
        return TestRun(exit_code=shards.DEADLINE_EXIT if len(done) < len(paths) else 0, seconds=len(paths),
                       report_found=True, results={f"{p}::t{j}": TestResult(outcome="passed", seconds=0.3)
                                                   for p in done for j in range(3)})

    real = shards.sharded_run

    def each_round(runtime, gold, chunks, timeout, **kwargs):
        rounds.append(([f for chunk in chunks for f in chunk], kwargs["deadline"]))
        return real(runtime, gold, chunks, timeout, **kwargs)

    monkeypatch.setattr(shards, "sharded_run", each_round)
    _, sample = _first_pass_of(monkeypatch, files, run_tests, clock)
    last, deadline = rounds[-1]
    assert last == ["pkg6/test_6.py"] and deadline <= 30
    assert any("pkg6/test_6.py" in files for files, _ in rounds[:-1])  # cut there first
    assert "pkg6/test_6.py" in sample.kept_files and sample.kept_packages == 8
