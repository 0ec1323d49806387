"""The Python side of the runner's results: which converter reads an inner runner's output,
and the test ids of a JUnit report ``debtest.sh`` wrote.

Ids (docs/debian.md): ``<autopkgtest test>::<inner id>``, or the autopkgtest test alone
for its one-result form. In the report the test is the testcase's ``classname`` and the
inner id its ``name`` (no ``file`` attribute); the one-result form has ``name`` equal to
``classname``. The report's suite is named ``autopkgtest``, which tells it from pytest's.

``harness.testrun.parse_junit`` reads such a report (``debtest_id``) by the one rule it
reads pytest's with.
"""

from __future__ import annotations

from importlib import resources

from cligym.models.debian_tests import InnerRunner

#: the awk converter of each inner runner (``harness/scripts/junit/<file>``); every one
#: runs after ``common.awk``
CONVERTERS: dict[InnerRunner, str] = {
    "tap": "tap.awk", "gotest": "gotest.awk", "rspec": "rspec.awk", "libtest": "libtest.awk",
    "testthat": "testthat.awk", "ert": "ert.awk", "none": "none.awk",
}
COMMON = "common.awk"
RUNNER_SCRIPT = "debtest.sh"


def converter_name(runner: str) -> str:
    """The converter file of ``runner`` (the fallback's for a runner without one)."""
    return CONVERTERS.get(runner, CONVERTERS["none"])  # type: ignore[call-overload]


def script_text(name: str) -> str:
    """A script of the runner's: ``debtest.sh`` or ``junit/<converter>``, from the package data."""
    folder = resources.files("cligym.harness").joinpath("scripts")
    if name != RUNNER_SCRIPT:
        folder = folder.joinpath("junit")
    return folder.joinpath(name).read_text(encoding="utf-8")
