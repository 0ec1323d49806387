"""One rule says which tests failed in a run (``TestRun.failing``): a test passed only when
the run wrote a report that says ``passed``. The inversion's F2P/P2P split
(``invert.context.classify``), the broken-state checks (``verify.checks``) and the
record's own sets all give its answer, for every outcome a record can hold."""

from __future__ import annotations

import ast
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from cligym.harness.testrun import parse_junit
from cligym.invert.context import classify
from cligym.models.testrun import TestResult, TestRun
from cligym.verify import checks

SRC = Path(__file__).resolve().parents[2] / "src" / "cligym"

#: What pytest's JUnit writer makes of each outcome (xfail: skipped; xpass: passed, or a
#: failure when strict), with one requested test the report lacks and one in a module
#: that failed to import.
REPORT = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="t" name="test_pass" file="t.py" time="0.1"/>
<testcase classname="t" name="test_fail" file="t.py"><failure message="assert 1 == 2">E assert</failure></testcase>
<testcase classname="t" name="test_error" file="t.py"><error message="fixture boom">boom</error></testcase>
<testcase classname="t" name="test_skip" file="t.py">\
<skipped type="pytest.skip" message="no x">skip</skipped></testcase>
<testcase classname="t" name="test_xfail" file="t.py">\
<skipped type="pytest.xfail" message="known">xfail</skipped></testcase>
<testcase classname="t" name="test_xpass" file="t.py"/>
<testcase classname="t" name="test_xpass_strict" file="t.py"><failure message="[XPASS(strict)] known"/></testcase>
<testcase classname="" name="broken" time="0"><error message="collection failure">ImportError: x</error></testcase>
</testsuite></testsuites>"""
IDS = ["t.py::test_pass", "t.py::test_fail", "t.py::test_error", "t.py::test_skip", "t.py::test_xfail",
       "t.py::test_xpass", "t.py::test_xpass_strict", "t.py::test_gone", "broken.py::test_a"]
#: The outcome each id gets, and whether it passes.
EXPECTED = {
    "t.py::test_pass": ("passed", True), "t.py::test_fail": ("failed", False), "t.py::test_error": ("error", False),
    "t.py::test_skip": ("skipped", False), "t.py::test_xfail": ("skipped", False),
    "t.py::test_xpass": ("passed", True), "t.py::test_xpass_strict": ("failed", False),
    "t.py::test_gone": ("missing", False), "broken.py::test_a": ("error", False),
}


def reported(report_found: bool = True) -> TestRun:
    return TestRun(exit_code=1, seconds=1.0, report_found=report_found, results=parse_junit(REPORT, IDS))


def made(outcomes: dict[str, str], report_found: bool = True) -> TestRun:
    return TestRun(exit_code=1, seconds=1.0, report_found=report_found,
                   results={t: TestResult(outcome=o) for t, o in outcomes.items()})


def test_every_outcome_a_report_can_give():
    run = reported()
    assert {t: (run.results[t].outcome, run.passes(t)) for t in IDS} == EXPECTED
    assert run.failing(IDS) == [t for t in IDS if not EXPECTED[t][1]]
    assert run.passed() == {"t.py::test_pass", "t.py::test_xpass"}
    assert run.not_passed() == set(IDS) - run.passed()


def test_a_test_with_no_outcome_failed():
    run = made({"a": "passed"})
    assert run.failing(["a", "never_run"]) == ["never_run"]
    assert not run.passes("never_run")
    assert run.not_passed() == set()  # the record's own sets cover what it reports


def test_a_run_without_a_report_failed_every_test():
    """The test command itself failed: every selected test is F2P, whatever the results say."""
    run = made({"a": "passed", "b": "error"}, report_found=False)
    assert run.failing(["a", "b", "c"]) == ["a", "b", "c"]
    assert run.passed() == set() and run.not_passed() == {"a", "b"}
    assert classify(run, ["a", "b", "c"]) == (["a", "b", "c"], [])
    assert classify(made({}, report_found=False), ["a"]) == (["a"], [])


def test_order_is_the_callers_and_each_id_comes_once():
    run = made({"a": "failed", "b": "passed", "c": "skipped"})
    assert run.failing(["c", "b", "a", "c", "a"]) == ["c", "a"]
    assert classify(run, ["c", "b", "a", "b", "c"]) == (["c", "a"], ["b"])
    assert run.failing([]) == [] and classify(run, []) == ([], [])


@pytest.mark.parametrize("test", IDS)
def test_the_inversion_splits_by_the_rule(test):
    f2p, p2p = classify(reported(), [test])
    assert (f2p, p2p) == (([], [test]) if EXPECTED[test][1] else ([test], []))


class Judged(Exception):
    """The broken-state check got past its repeat run (to the verifier's judgement)."""


class _Runtime:
    """Sessions of nothing: the repeat run and the scan in it are stand-ins."""

    @contextmanager
    def session(self, image: str):
        yield SimpleNamespace(image=image)


def _nothing_done(monkeypatch, run: TestRun) -> None:
    """The repeat run (in the scan's container) goes like ``run``; the scan finds nothing."""
    from cligym.models.fs import LeakReport

    monkeypatch.setattr(checks, "run_tests_in_session", lambda *a, **k: run)
    monkeypatch.setattr(checks, "run_tests", lambda *a, **k: run)
    monkeypatch.setattr(checks, "scan_in", lambda *a, **k: LeakReport())


def repeat_verdict(monkeypatch, run: TestRun, f2p: list[str], p2p: list[str]) -> str:
    """The kind ``check_broken_state`` gives after a repeat run that went like ``run``
    ("reproduced" when it goes on to the verifier's judgement)."""
    _nothing_done(monkeypatch, run)
    monkeypatch.setattr(checks, "verifier_check", lambda *a, **k: (_ for _ in ()).throw(Judged()))
    gold = SimpleNamespace(workdir="/testbed", test_command="pytest", image="gold")
    try:
        verdict = checks.check_broken_state(_Runtime(), gold, None, "broken", f2p, p2p, "true")
    except Judged:
        return "reproduced"
    return verdict.kind


@pytest.mark.parametrize("test", [t for t in IDS if t != "t.py::test_pass"])
def test_the_broken_state_check_judges_by_the_rule(monkeypatch, test):
    run = reported()
    expected = "trivial" if EXPECTED[test][1] else "reproduced"
    assert repeat_verdict(monkeypatch, run, [test], ["t.py::test_pass"]) == expected
    if not EXPECTED[test][1]:  # failing as a P2P test: not the recorded F2P set
        other = next(t for t in IDS if t != test and not EXPECTED[t][1])
        assert repeat_verdict(monkeypatch, run, [other], ["t.py::test_pass", test]) == "not_reproducible"


def test_the_broken_state_check_without_a_report_or_a_result(monkeypatch):
    assert repeat_verdict(monkeypatch, made({"a": "passed"}), ["a", "b"], []) == "not_reproducible"  # a passes
    assert repeat_verdict(monkeypatch, made({"a": "passed"}), ["b"], ["a"]) == "reproduced"  # b never ran
    assert repeat_verdict(monkeypatch, made({"a": "passed", "b": "failed"}, report_found=False), ["b"], ["a"]) == (
        "not_reproducible")
    assert repeat_verdict(monkeypatch, made({"a": "error", "b": "error"}, report_found=False), ["a", "b"], []) == (
        "reproduced")


def test_after_the_solution_every_test_must_pass_by_the_rule(monkeypatch):
    from cligym.harness.trial import Judgement
    from cligym.models.validate import ModeResult
    from cligym.models.verify import Verification
    from cligym.runtime import RunResult

    def judged(run: TestRun) -> Verification:
        _nothing_done(monkeypatch, made({"a": "failed", "b": "passed"}))
        monkeypatch.setattr(checks, "gather", lambda *a, **k: (None, b""))
        # the verifier would give 1: only the tests after the solution decide
        monkeypatch.setattr(checks, "judge_image", lambda *a, **k: Judgement(
            ModeResult(reward=0.0), RunResult(exit_code=0, output="", seconds=0.0), run, ModeResult(reward=1.0)))
        gold = SimpleNamespace(workdir="/testbed", test_command="pytest", image="gold")
        return checks.check_broken_state(_Runtime(), gold, None, "broken", ["a"], ["b"], "true")

    assert judged(made({"a": "passed", "b": "passed"})).ok
    for after in ({"a": "passed", "b": "skipped"}, {"a": "missing", "b": "passed"}, {"b": "passed"}):
        verdict = judged(made(after))
        assert (verdict.ok, verdict.kind) == (False, "not_solvable") and "1 tests still fail" in verdict.reason
    assert judged(made({"a": "passed", "b": "passed"}, report_found=False)).kind == "not_solvable"


def test_no_judging_stage_reads_outcomes_itself():
    """invert and verify ask the record (``failing``, ``passes``, ``passed``), never compare
    an outcome themselves: one rule, not one per stage."""
    spelled = []
    for path in sorted((SRC / "invert").rglob("*.py")) + sorted((SRC / "verify").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(
                    isinstance(side, ast.Attribute) and side.attr == "outcome"
                    for side in [node.left, *node.comparators]):
                spelled.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert spelled == []
