"""Node ids from JUnit reports: rebuilt from xunit1 cases, inherited tests, pytest's
mangling, outcomes and messages, and the shell command a subset run is given."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from cligym.harness.testrun import (
    MESSAGE_BUDGET,
    REPORT_OPTIONS,
    REPORT_PATH,
    _explain_missing,
    expected_key,
    no_report_message,
    node_id_of,
    parse_junit,
    shell_command,
)

REPORT = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5">
<testcase classname="tests.test_a" name="test_ok" file="tests/test_a.py" line="1" time="0.010"/>
<testcase classname="tests.test_a.TestK" name="test_p[x y-1]" file="tests/test_a.py" line="5" time="0.020">
  <failure message="AssertionError: 1 != 2">def test...\nE   AssertionError</failure></testcase>
<testcase classname="tests.test_a" name="test_skip" file="tests/test_a.py" line="9" time="0">
  <skipped type="pytest.skip" message="no reason">skip</skipped></testcase>
<testcase classname="tests.test_a" name="test_err" file="tests/test_a.py" line="12" time="0.1">
  <error message="failed on setup with &quot;boom&quot;">boom</error></testcase>
<testcase classname="" name="tests.test_broken" time="0">\
<error message="collection failure">ImportError: no module x</error></testcase>
</testsuite></testsuites>"""


def test_node_ids_rebuilt_from_xunit1_cases():
    cases = list(ET.fromstring(REPORT).iter("testcase"))
    assert node_id_of(cases[0]) == "tests/test_a.py::test_ok"
    assert node_id_of(cases[1]) == "tests/test_a.py::TestK::test_p[x y-1]"


def test_node_id_of_a_test_inherited_from_another_module():
    """A class in test_timed.py inherits its tests from a class of test_serializer.py: the
    report names the defining file, the node id (and pytest's own selection) the subclass's."""
    case = ET.fromstring(
        '<testcase classname="tests.pkg.test_timed.TestTimed" name="test_salt[zlib]" '
        'file="tests/pkg/test_serializer.py"/>'
    )
    assert node_id_of(case) == "tests/pkg/test_timed.py::TestTimed::test_salt[zlib]"
    top = ET.fromstring('<testcase classname="test_b.TestB" name="test_x" file="test_a.py"/>')
    assert node_id_of(top) == "test_b.py::TestB::test_x"
    other = ET.fromstring('<testcase classname="unit.test_c.TestC.TestD" name="test_y" file="shared/base.py"/>')
    assert node_id_of(other) == "unit/test_c.py::TestC::TestD::test_y"
    assert expected_key(node_id_of(case)) == (case.get("classname"), case.get("name"))


def test_expected_key_matches_pytest_mangling():
    assert expected_key("tests/test_a.py::TestK::test_p[x y-1]") == ("tests.test_a.TestK", "test_p[x y-1]")
    assert expected_key("test_top.py::test_x") == ("test_top", "test_x")


def test_parse_outcomes_and_messages():
    results = parse_junit(REPORT)
    assert results["tests/test_a.py::test_ok"].outcome == "passed"
    assert results["tests/test_a.py::test_ok"].seconds == 0.01
    failed = results["tests/test_a.py::TestK::test_p[x y-1]"]
    assert failed.outcome == "failed" and "AssertionError" in failed.message
    assert results["tests/test_a.py::test_skip"].outcome == "skipped"
    assert results["tests/test_a.py::test_err"].outcome == "error"


def test_requested_ids_missing_or_in_broken_module():
    requested = ["tests/test_a.py::test_ok", "tests/test_broken.py::test_z", "tests/test_gone.py::test_q"]
    results = parse_junit(REPORT, requested)
    assert results["tests/test_broken.py::test_z"].outcome == "error"
    assert "ImportError" in results["tests/test_broken.py::test_z"].message
    assert results["tests/test_gone.py::test_q"].outcome == "missing"
    _explain_missing(results, "collected 24 items\n............ssssssssssss\n"
                              "===== 12 passed, 12 skipped in 0.03s =====\n")
    assert (results["tests/test_gone.py::test_q"].message
            == "this test did not run (pytest: 12 passed, 12 skipped in 0.03s)")
    assert results["tests/test_a.py::test_ok"].outcome == "passed"


def test_shell_names_itself_sh_not_a_harness_name():
    argv = shell_command("/testbed", "python -m pytest")
    assert argv[:2] == ["sh", "-c"] and argv[3] == "sh" and "cligym-tests" not in argv


def test_collection_error_keeps_the_real_error_within_the_budget():
    frames = "".join(f"/opt/venv/lib/python3.11/site-packages/pkg/mod{i}.py:{i}: in &lt;module&gt;\n"
                     f"    import mod{i + 1}\n"
                     for i in range(80))
    xml = f"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" tests="1">
<testcase classname="" name="tests.test_wrap" time="0">\
<error message="collection failure">ImportError while importing test module '/testbed/tests/test_wrap.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
{frames}E   ModuleNotFoundError: No module named 'textwrap'</error></testcase></testsuite></testsuites>""".encode()
    message = parse_junit(xml, ["tests/test_wrap.py::test_fill"])["tests/test_wrap.py::test_fill"].message
    assert len(message) <= MESSAGE_BUDGET
    assert message.startswith("ImportError while importing test module '/testbed/tests/test_wrap.py'.")
    assert message.endswith("E   ModuleNotFoundError: No module named 'textwrap'")
    assert "import mod80" in message and "import mod1\n" not in message  # the traceback's end is kept
    assert "collection failure" not in message and "valid Python names" not in message


def test_no_report_message_is_the_outputs_end_without_harness_words():
    frames = "".join(f'  File "/opt/venv/lib/python3.11/site-packages/_pytest/m{i}.py", line {i}, in <module>\n'
                     f"    from typing import Any{i}\n" for i in range(40))
    output = (f"Traceback (most recent call last):\n{frames}"
              "\x1b[1;35mImportError\x1b[0m: cannot import name 'Any' from 'typing' (/testbed/typing.py)\n")
    message = no_report_message(output, False, 1)
    assert len(message) <= MESSAGE_BUDGET and "\x1b" not in message
    assert message.endswith("ImportError: cannot import name 'Any' from 'typing' (/testbed/typing.py)")
    assert "no report" not in message and "output ended" not in message
    usage = f"ERROR: usage: __main__.py [options]\n__main__.py: error: unrecognized arguments: {REPORT_OPTIONS} -x\n"
    assert (REPORT_PATH not in no_report_message(usage, False, 4)
            and "junit_family" not in no_report_message(usage, False, 4))
    assert no_report_message("", False, 127) == "the test command printed nothing (exit status 127)"
    assert no_report_message("sh: 1: python: not found\n", True, None) == (
        "sh: 1: python: not found\n(the test command timed out)")


def test_missing_ids_carry_pytests_own_error_lines():
    requested = ["tests/test_a.py::test_ok", "tests/test_a.py::test_gone[x]"]
    results = parse_junit(REPORT, requested)
    output = ("ERROR: not found: /testbed/tests/test_a.py::test_gone[x]\n"
              "(no match in any of [<Module test_a.py>])\n\n========== no tests ran in 0.05s ==========\n")
    _explain_missing(results, output)
    message = results["tests/test_a.py::test_gone[x]"].message
    assert message == ("ERROR: not found: /testbed/tests/test_a.py::test_gone[x]\n"
                       "(no match in any of [<Module test_a.py>])\n"
                       "this test did not run (pytest: no tests ran in 0.05s)")
    assert "report" not in message and "collected" not in message


def test_a_module_that_fails_to_import_refuses_all_its_ids_and_no_other():
    """pytest stops a run of ids when one's module fails to import, and names the ids it
    could not collect without their parameters, only some of them: the module's ids
    fail, the others run again and keep their own outcomes (jinja2's async tests once
    failed every sampled test when trio was broken)."""
    from cligym.harness.testrun import _without_unknown_ids
    from cligym.models.testrun import TestResult, TestRun

    broken = ["tests/test_async.py::TestLoop::test_vars[<lambda>1]", "tests/test_async.py::test_basic[asyncio]"]
    ids = [broken[0], "tests/test_api.py::test_ok[x]", broken[1], "tests/test_api.py::TestK::test_two"]
    calls = []

    def once(chosen):
        calls.append(list(chosen))
        if any(t in broken for t in chosen):
            output = ("____ ERROR collecting tests/test_async.py ____\nE   ImportError: cannot import name 'x'\n"
                      "ERROR: found no collectors for /testbed/tests/test_async.py::TestLoop::test_vars\n")
            results = {t: TestResult(outcome="missing", message="this test did not run") for t in chosen}
            return TestRun(exit_code=4, timed_out=False, seconds=1, report_found=True, results=results,
                           output_tail=output, refusals={"/testbed/tests/test_async.py::TestLoop::test_vars":
                                                         "found no collectors for"})
        results = {t: TestResult(outcome="passed") for t in chosen}
        return TestRun(exit_code=0, timed_out=False, seconds=1, report_found=True, results=results, output_tail="")

    run = _without_unknown_ids(once, "/testbed", ids)
    assert calls == [ids, [ids[1], ids[3]]]
    assert [run.results[t].outcome for t in ids] == ["error", "passed", "error", "passed"]
    assert "cannot import name 'x'" in run.results[broken[1]].message


def test_a_skipped_test_whose_teardown_failed_is_an_error():
    xml = b"""<testsuites><testsuite><testcase classname="tests.test_a" name="test_x" file="tests/test_a.py">
      <skipped message="no network" type="pytest.skip"/><error message="failed on teardown with X">E   X</error>
    </testcase></testsuite></testsuites>"""
    assert parse_junit(xml)["tests/test_a.py::test_x"].outcome == "error"


def test_ids_pytest_refuses_are_read_from_the_whole_output_however_many():
    """pytest stops a run of ids when it finds some of them no more, naming each: with
    thousands refused (a huge suite whose plugin names classes differently when selected),
    the list is far longer than the output's tail. Every refused id is read, the others run
    again once, and only the refused ones are missing."""
    from cligym.harness.testrun import run_tests
    from cligym.runtime import RunResult

    found = [f"tests/test_a.py::test_{i}" for i in range(20)]
    gone = [f"tests/test_b.py::Generated_backend_{i}::test_something_rather_long_{i}" for i in range(2000)]
    calls: list[list[str]] = []

    class Runtime:
        def run(self, image, argv, timeout, fetch):
            ids = argv[argv.index("sh", 1) + 1:]
            calls.append(ids)
            refused = [t for t in ids if t in set(gone)]
            if refused:
                output = "".join(f"ERROR: not found: /testbed/{t}\n(no match in any of [<Module test_b.py>])\n\n"
                                 for t in refused)
                return RunResult(exit_code=4, output=output + "no tests ran in 0.31s\n", seconds=1.0)
            cases = "".join(f'<testcase classname="tests.test_a" name="{t.split("::")[1]}" file="tests/test_a.py" '
                            'time="0.01"/>' for t in ids)
            report = f'<testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>'.encode()
            return RunResult(exit_code=0, output="20 passed\n", seconds=1.0, files={REPORT_PATH: report})

    run = run_tests(Runtime(), "image", "/testbed", "python -m pytest", [*found, *gone])
    assert len(calls) == 2 and calls[1] == found
    assert run.passed() == set(found)
    assert {run.results[t].outcome for t in gone} == {"missing"}
    assert len(run.output_tail) < sum(map(len, gone))  # the tail alone could not have named them
