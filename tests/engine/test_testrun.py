"""Subset runs of recorded test ids on real gold images: a vanished id fails alone, a broken
module fails only its tests, and a broken test command marks every id."""

from __future__ import annotations

from cligym.harness.testrun import (
    run_tests,
)


def test_subset_run_of_recorded_ids_in_real_image(runtime, gold_envs):
    gold = gold_envs("markupsafe==3.0.2")
    # parametrised ids with quotes, escapes and spaces go through the shell untouched
    subset = [t for t in gold.tests if "[" in t][:40] + gold.tests[:3]
    run = run_tests(runtime, gold.image, gold.workdir, gold.test_command, subset, timeout=300)
    assert run.report_found
    assert set(run.results) == set(subset)
    assert run.passed() == set(subset)


def test_broken_test_command_marks_every_id(runtime, gold_envs):
    gold = gold_envs("markupsafe==3.0.2")
    ids = gold.tests[:5]
    run = run_tests(runtime, gold.image, gold.workdir, "false &&", ids, timeout=120)
    assert not run.report_found
    assert {r.outcome for r in run.results.values()} == {"error"} and set(run.results) == set(ids)


def test_an_id_that_vanished_fails_alone_and_a_broken_module_fails_only_its_tests(runtime, gold_envs):
    """Two ways a breakage reaches only part of a suite, on the real markupsafe image: its
    compiled speedups removed, the tests parametrised on them no longer exist (pytest would
    refuse the whole run of ids); a test module that cannot import its helpers fails, and
    pytest goes on with the other modules."""
    import uuid

    from cligym.harness.images import build_broken

    gold = gold_envs("markupsafe==3.0.2")
    site = "/opt/venv/lib/python3.11/site-packages"
    tag = f"cligym/test-partial:{uuid.uuid4().hex[:8]}"
    lines = [f"RUN rm -f {site}/markupsafe/_speedups.*.so && "
             f"echo 'import no_such_module' > {gold.workdir}/tests/test_leak.py"]
    try:
        build_broken(runtime, gold, lines, tag)
        speedups = next(t for t in gold.tests if "_speedups" in t and "test_markupsafe.py" in t)
        native = speedups.replace("_speedups", "_native")
        escape = next(t for t in gold.tests if t.startswith("tests/test_escape.py") and "_native" in t)
        leak = next(t for t in gold.tests if t.startswith("tests/test_leak.py"))
        run = run_tests(runtime, tag, gold.workdir, gold.test_command, [speedups, native, escape, leak], timeout=300)
    finally:
        runtime.remove_image(tag)
    assert run.report_found
    assert run.results[native].outcome == run.results[escape].outcome == "passed"
    assert run.results[speedups].outcome == "missing" and "not found" in run.results[speedups].message
    assert run.results[leak].outcome == "error" and "no_such_module" in run.results[leak].message
    assert run.results[leak].message.startswith("ImportError while importing test module")


def test_a_projects_own_maxfail_does_not_leave_tests_unrun(runtime, gold_envs):
    """A project whose options stop pytest after its first failure (``-x`` in addopts, as
    some suites ship) still has every requested test run and reported: a state that fails
    several tests must not leave the ones after them "did not run"."""
    import uuid

    from cligym.harness.images import build_broken

    gold = gold_envs("markupsafe==3.0.2")
    tag = f"cligym/test-maxfail:{uuid.uuid4().hex[:8]}"
    failing = "def test_a():\\n    assert 0\\ndef test_b():\\n    assert 0\\n"
    lines = [f"RUN printf '[pytest]\\naddopts = -x --maxfail=1\\n' > {gold.workdir}/pytest.ini && "
             f"printf '{failing}' > {gold.workdir}/tests/test_aa_fails.py"]
    ids = ["tests/test_aa_fails.py::test_a", "tests/test_aa_fails.py::test_b", *gold.tests[:4]]
    try:
        build_broken(runtime, gold, lines, tag)
        run = run_tests(runtime, tag, gold.workdir, gold.test_command, ids, timeout=300)
    finally:
        runtime.remove_image(tag)
    assert run.report_found
    assert run.failing(ids) == ids[:2]
    assert run.passed() == set(ids[2:])
