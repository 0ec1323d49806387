"""A gold suite within its time budget: collection parsed (cligym.gold.collection), files
stratified by package, split between shards, shard runs merged (cligym.gold.shards)."""

from __future__ import annotations

import pytest

from cligym.gold.collection import parse_collection
from cligym.gold.sampling import package_of, split, split_led, stratified
from cligym.gold.shards import DEADLINE_EXIT, _Cost, merged, unfinished
from cligym.models.testrun import TestResult, TestRun

COLLECTED = """\
tests/test_a.py::test_one
tests/test_a.py::TestK::test_two[x-1]
tests/sub/test_b.py::test_three
src/pkg/mod.py::pkg.mod.func
README.rst::README.rst

==================================== ERRORS ====================================
___________________ ERROR collecting tests/test_broken.py ______________________
ImportError while importing test module '/testbed/tests/test_broken.py'.
=========================== short test summary info ============================
ERROR tests/test_broken.py - ModuleNotFoundError: No module named 'nope'
5 tests collected, 1 error in 0.12s
"""


def test_a_quieter_collection_names_each_file_with_its_count():
    found = parse_collection("tests/test_a.py: 2\ntests/sub/test_b.py: 1\n\n3 tests collected in 0.01s\n")
    assert found.files == {"tests/test_a.py": 2, "tests/sub/test_b.py": 1} and found.tests == 3


def test_collection_names_each_file_with_its_tests_and_the_files_that_failed_to_import():
    found = parse_collection(COLLECTED)
    assert found.files == {"tests/test_a.py": 2, "tests/sub/test_b.py": 1, "src/pkg/mod.py": 1, "README.rst": 1,
                           "tests/test_broken.py": 0}
    assert found.errors == ["tests/test_broken.py"] and found.tests == 5


def test_every_prefix_of_the_stratified_order_spreads_over_the_packages_and_a_seed_repeats_it():
    files = [f"pkg{p}/tests/test_{i}.py" for p in range(5) for i in range(p * 3 + 1)]
    order = stratified(files, seed=1)
    assert sorted(order) == sorted(files)
    assert {package_of(f) for f in order[:5]} == {f"pkg{p}/tests" for p in range(5)}
    assert stratified(files, seed=1) == order and stratified(files, seed=2) != order
    # with weights, each package's lightest file comes first (every package costs least to represent)
    weights = {f: float(len(f) + i % 7) for i, f in enumerate(files)}
    light = stratified(files, seed=1, weights=weights)
    for package in {package_of(f) for f in files}:
        members = [f for f in files if package_of(f) == package]
        first = next(f for f in light if package_of(f) == package)
        assert weights[first] == min(weights[f] for f in members)


def test_a_split_keeps_the_order_and_balances_the_weight():
    files = ["a", "b", "c", "d", "e"]
    chunks = split(files, {"a": 10, "b": 1, "c": 1, "d": 4, "e": 4}, 2)
    assert [f for chunk in chunks for f in chunk] == files and chunks[0] == ["a"]
    assert split(["a"], {}, 4) == [["a"]] and split(files, {}, 1) == [files]


def test_a_rounds_files_of_packages_not_yet_run_lead_every_shard():
    files = ["p/1", "q/1", "q/2", "r/1", "q/3", "s/1", "q/4"]
    leading = {"p/1", "r/1", "s/1"}
    chunks = split_led(files, leading, {}, 2)
    assert sorted(f for chunk in chunks for f in chunk) == sorted(files)
    assert len(chunks) == 2 and all(chunk[0] in leading for chunk in chunks)
    for chunk in chunks:  # the leading files before any other, in order
        heads = [f in leading for f in chunk]
        assert heads == sorted(heads, reverse=True) and chunk == sorted(chunk, key=lambda f: (f not in leading,
                                                                                              files.index(f)))
    assert abs(len(chunks[0]) - len(chunks[1])) <= 1
    assert split_led(files, set(), {}, 2) == split(files, {}, 2)
    # a heavy leading file: the others fill the other run, not half of each
    heavy = split_led(["p/1", "q/1", "q/2", "q/3", "q/4"], {"p/1"}, {"p/1": 40, "q/1": 5, "q/2": 5, "q/3": 5,
                                                                     "q/4": 5}, 2)
    assert heavy == [["p/1"], ["q/1", "q/2", "q/3", "q/4"]]


def test_shards_merge_into_one_run_and_a_silent_shard_adds_no_result():
    ok = TestRun(exit_code=0, seconds=2.0, report_found=True, results={"t.py::a": TestResult(outcome="passed")})
    failed = TestRun(exit_code=1, seconds=3.0, report_found=True, results={"u.py::b": TestResult(outcome="failed")})
    silent = TestRun(exit_code=None, timed_out=True, seconds=9.0, report_found=False)
    run = merged([ok, failed], seconds=3.1)
    assert (run.exit_code, run.seconds, run.passed(), run.not_passed()) == (1, 3.1, {"t.py::a"}, {"u.py::b"})
    run = merged([ok, silent], seconds=9.0)
    assert run.timed_out and run.exit_code is None and run.report_found and run.failing(["t.py::a", "v.py::c"]) \
        == ["v.py::c"]


def test_the_rounds_cost_says_what_fits_passing_over_a_file_too_costly():
    weights = {"a": 2.0, "b": 2.0, "c": 1.0}
    run = TestRun(exit_code=0, seconds=5.0, report_found=True,
                  results={"a::t": TestResult(outcome="passed", seconds=1.0),
                           "b::t": TestResult(outcome="passed", seconds=3.0)})
    overran = TestRun(exit_code=DEADLINE_EXIT, seconds=20.0, report_found=True)
    cost = _Cost()
    cost.add([["a", "b"]], [run], weights)
    # 5 s: 4 of tests (weight 4), 1 beyond them, shared by its 2 files
    assert cost.file_seconds("x", {"x": 3.0}) == 0.5 + 3.0
    cost.add([["c"]], [overran], weights)  # cut: its 20 s count as tests of weight 1
    assert cost.file_seconds("x", {"x": 1.0}) == pytest.approx(1 / 3 + 24.0 / 5)
    more = {"d": 1.0, "e": 100.0, "f": 2.0}
    per_file, per_weight = 1 / 3, 24.0 / 5
    room = 2 * 11.0  # 11 s on 2 shards
    assert per_file + per_weight * 1 + per_file + per_weight * 2 <= room < per_file + per_weight * 100
    assert cost.fitting(["d", "e", "f"], more, 2, 11.0) == ["d", "f"]
    assert cost.whole(["d", "f"], more) == pytest.approx(2 * per_file + 3 * per_weight)
    assert cost.round_seconds(["d", "f"], more, 2) == pytest.approx(cost.whole(["d", "f"], more) / 2)


def test_a_shard_its_deadline_cut_keeps_only_the_files_it_finished():
    passed = TestResult(outcome="passed")
    cut = TestRun(exit_code=DEADLINE_EXIT, seconds=30.0, report_found=True,
                  results={"a.py::x": passed, "a.py::y": passed, "b.py::x": passed})
    assert unfinished(["a.py", "b.py", "c.py"], cut) == ["b.py", "c.py"]  # b's last test may not be its last
    assert unfinished(["a.py", "b.py", "c.py"], cut, {"a.py": 2, "b.py": 1, "c.py": 4}) == ["c.py"]
    assert unfinished(["a.py", "b.py", "c.py"], cut, {"a.py": 3, "b.py": 1, "c.py": 4}) == ["a.py", "c.py"]
    whole = cut.model_copy(update={"exit_code": 1})
    assert unfinished(["a.py", "b.py", "c.py"], whole) == []  # it ended by itself: every file ran


def test_a_shard_the_kernel_killed_is_run_again_in_halves(monkeypatch):
    """A repeat shard killed by the kernel (its memory limit: one process running thousands
    of a huge suite's tests) writes no report; its files are run again in halves, halved
    again while killed, so the merged run still has every test."""
    from types import SimpleNamespace

    from cligym.gold import shards

    files = [f"tests/test_{i}.py" for i in range(8)]
    calls: list[list[str]] = []

    def run_tests(runtime, image, workdir, command, node_ids=(), *, paths=(), timeout=0):
        calls.append(list(paths))
        if len(paths) > 2:  # more than two files in one process: over the memory limit
            return TestRun(exit_code=shards.KILLED_EXIT, seconds=1, report_found=False)
        results = {f"{p}::test": TestResult(outcome="passed") for p in paths}
        return TestRun(exit_code=0, seconds=1, report_found=True, results=results)

    monkeypatch.setattr(shards, "run_tests", run_tests)
    gold = SimpleNamespace(image="gold", workdir="/testbed", test_command="python -m pytest")
    run, parts = shards.sharded_run(None, gold, [files[:6], files[6:]], 60)
    assert run.passed() == {f"{p}::test" for p in files}
    assert sorted(len(c) for c in calls) == [1, 1, 2, 2, 2, 3, 3, 6]  # 6 killed; its halves 3 + 3 killed too
    assert len(parts) == 5 and all(p.exit_code == 0 for p in parts)


def test_later_runs_put_no_more_files_in_one_container_than_the_first_pass_ran(monkeypatch):
    """A repeat of a sample's kept files is cut into chunks of at most the files one
    container of the first pass ran to its end, run ``shards`` at a time."""
    from types import SimpleNamespace

    from cligym.gold import sampling, shards
    from cligym.models.gold import SuiteSample

    files = [f"tests/test_{i}.py" for i in range(10)]
    sample = SuiteSample(budget_seconds=60, shards=2, seed=0, files=10, tests=None, packages=1, kept_packages=1,
                         kept_files=files, shard_files=3)
    chunks = sampling.chunks_of(files, {}, sample)
    assert len(chunks) == 4 and max(map(len, chunks)) <= 3 and [f for c in chunks for f in c] == files
    assert len(sampling.chunks_of(files, {}, sample.model_copy(update={"shard_files": None}))) == 2

    at_once_sizes: list[int] = []
    real_at_once = shards.at_once
    monkeypatch.setattr(shards, "at_once", lambda runtime, calls: at_once_sizes.append(len(calls)) or
                        real_at_once(runtime, calls))
    monkeypatch.setattr(shards, "run_tests", lambda runtime, image, workdir, command, node_ids=(), *, paths=(),
                        timeout=0: TestRun(exit_code=0, seconds=1, report_found=True,
                                           results={f"{p}::t": TestResult(outcome="passed") for p in paths}))
    gold = SimpleNamespace(image="gold", workdir="/testbed", test_command="python -m pytest")
    run, parts = shards.sharded_run(None, gold, chunks, 60, at_a_time=2)
    assert at_once_sizes == [2, 2] and len(parts) == 4 and run.passed() == {f"{p}::t" for p in files}
