"""The issue stage: problem statements for a task, with and without a hint."""

from cligym.issue.writer import STYLES, IssueText, TaskIssues, leaks, strip_hint, write_issues

__all__ = ["STYLES", "IssueText", "TaskIssues", "leaks", "strip_hint", "write_issues"]
