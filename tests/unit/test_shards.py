"""A gold suite within its time budget: collection parsed, files stratified by package,
split between shards, shard runs merged (cligym.gold.shards)."""

from __future__ import annotations

from cligym.gold.shards import _fitting, merged, package_of, parse_collection, split, stratified
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


def test_a_split_keeps_the_order_and_balances_the_weight():
    files = ["a", "b", "c", "d", "e"]
    chunks = split(files, {"a": 10, "b": 1, "c": 1, "d": 4, "e": 4}, 2)
    assert [f for chunk in chunks for f in chunk] == files and chunks[0] == ["a"]
    assert split(["a"], {}, 4) == [["a"]] and split(files, {}, 1) == [files]


def test_shards_merge_into_one_run_and_a_silent_shard_adds_no_result():
    ok = TestRun(exit_code=0, seconds=2.0, report_found=True, results={"t.py::a": TestResult(outcome="passed")})
    failed = TestRun(exit_code=1, seconds=3.0, report_found=True, results={"u.py::b": TestResult(outcome="failed")})
    silent = TestRun(exit_code=None, timed_out=True, seconds=9.0, report_found=False)
    run = merged([ok, failed], seconds=3.1)
    assert (run.exit_code, run.seconds, run.passed(), run.not_passed()) == (1, 3.1, {"t.py::a"}, {"u.py::b"})
    run = merged([ok, silent], seconds=9.0)
    assert run.timed_out and run.exit_code is None and run.report_found and run.failing(["t.py::a", "v.py::c"]) \
        == ["v.py::c"]


def test_the_files_taken_are_those_estimated_to_fit():
    tests = {"a": 10, "b": 10, "c": 0, "d": 100}
    assert _fitting(["a", "b", "c", "d"], tests, 0.5, 11.0) == ["a", "b", "c"]  # c counts as one test
    assert _fitting(["d"], tests, 0.5, 11.0) == []
