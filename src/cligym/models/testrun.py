"""The record of one test run in a container: per-test outcomes from its JUnit report,
and the one rule that says which tests failed in it (``TestRun.failing``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

#: pytest's JUnit report gives an expected failure (xfail) as skipped, an unexpected pass
#: (xpass) as passed and a strict one as failed; ``missing``: a requested test the report lacks.
Outcome = Literal["passed", "failed", "error", "skipped", "missing"]


class TestResult(BaseModel):
    __test__ = False  # not a pytest test class

    outcome: Outcome
    seconds: float = 0.0
    message: str = ""


class TestRun(BaseModel):
    """One run of a test command in a container."""

    __test__ = False

    exit_code: int | None
    timed_out: bool = False
    seconds: float
    report_found: bool
    results: dict[str, TestResult] = Field(default_factory=dict)
    output_tail: str = ""
    #: the node ids pytest refused (as it printed them: its words for why), read from the
    #: whole output, of which the tail may hold only the last few of a long list; not saved
    refusals: dict[str, str] = Field(default_factory=dict, exclude=True)

    def passes(self, test: str) -> bool:
        """Whether ``test`` passed in this run: only when the run wrote a report and the
        report says ``passed``. Every other outcome (failed, error, skipped, xfail included,
        missing) fails, and so does a test with no outcome at all: one the run was not
        given, or any test of a run that wrote no report (the test command itself failed:
        every selected test is F2P)."""
        result = self.results.get(test)
        return self.report_found and result is not None and result.outcome == "passed"

    def failing(self, tests: Iterable[str]) -> list[str]:
        """The one failing-test rule, used by every stage: those of ``tests`` that did not
        pass (``passes``), in their order, each id once."""
        return [t for t in dict.fromkeys(tests) if not self.passes(t)]

    def passed(self) -> set[str]:
        """The tests this run reports that passed."""
        return {t for t in self.results if self.passes(t)}

    def not_passed(self) -> set[str]:
        """The tests this run reports that did not pass (``failing`` of its own results)."""
        return set(self.failing(self.results))

    def of_files(self, files: Iterable[str], *, but: bool = False) -> TestRun:
        """This run with the results of the test files ``files`` only (``but``: of all
        other files), in this run's order."""
        named = set(files)
        return self.model_copy(update={"results": {node: result for node, result in self.results.items()
                                                   if (node.split("::")[0] in named) != but}})
