"""The issue stage: problem statements for a task, with and without a hint, and the check
they pass before the task is saved."""

from cligym.issue.check import check_issues, check_text
from cligym.issue.clean import clean_error
from cligym.issue.facts import error_sentence
from cligym.issue.redact import leaks, strip_hint
from cligym.issue.writer import write_issues, write_missing_issues

__all__ = ["check_issues", "check_text", "clean_error", "error_sentence", "leaks", "strip_hint", "write_issues",
           "write_missing_issues"]
