"""The check an issue text passes before its task is saved (else the attempt is discarded
as ``bad_text``).

It reads the texts as they are, not the template the writer picked: a symptom counts as
stated when a distinctive part of its sentence appears in a text, a claim of an unchanged
source when its words do, whatever sentence carries them.
"""

from __future__ import annotations

import re

from cligym.issue.clean import clean_error, harness_wording, has_ansi
from cligym.issue.facts import (
    normal,
    source_changed,
    source_claims,
    stated_symptoms,
    unstated_symptoms,
)
from cligym.issue.redact import HINT_PREFIX, delta_paths, leaks, redact
from cligym.models.issue import TaskIssues
from cligym.models.task import Task

#: A part of a symptom sentence this long (in words) is distinctive enough to count as
#: stating the symptom when it appears in a text.
MIN_WORDS = 4
SPLIT = re.compile(r"[.;:!?](?:\s|$)|[,()]|\s+-{1,2}\s+|\s+—\s+")


def fragments(sentence: str) -> list[str]:
    """The sentence and its clauses of ``MIN_WORDS`` words or more, normalised."""
    whole = normal(sentence)
    parts = [normal(p) for p in SPLIT.split(whole)]
    return list(dict.fromkeys(p for p in [whole, *parts] if len(p.split()) >= MIN_WORDS))


def _unshown_symptoms(task: Task, text: str) -> list[str]:
    flat = normal(text)
    errors = [clean_error(e) for e in task.errors.values()]
    said = " \n ".join(normal(e) for e in [*errors, *(redact(e, task) for e in errors)])
    stated = [*stated_symptoms(task), *task.hints]  # the hints are stated whatever failed
    allowed = " \n ".join(normal(s) for s in [*stated, *(redact(s, task) for s in stated)])
    problems = []
    for name, symptom in unstated_symptoms(task):
        hits = [f for s in (symptom, redact(symptom, task)) for f in fragments(s)
                if f in flat and f not in said and f not in allowed]
        if hits:
            problems.append(f"states the symptom of {name} ({hits[0][:80]!r}), which no F2P error shows")
    return problems


def _source_claim(task: Task, text: str) -> list[str]:
    claims = source_claims(text)
    if not claims or not source_changed(task):
        return []
    root = task.workdir.rstrip("/") + "/"
    under = [p for p in delta_paths(task) if p.startswith(root)]
    why = f"ΔD changes {under[0]}" if under else "an operator of the code category changed the project's code"
    return [f"claims the source is unchanged ({claims[0]!r}) but {why}"]


def check_text(task: Task, text: str, *, hint_free: bool = False) -> list[str]:
    """The problems of one text (empty = fine)."""
    scrubbed = text
    for test in sorted({*task.FAIL_TO_PASS, *task.PASS_TO_PASS}, key=len, reverse=True):
        scrubbed = scrubbed.replace(test, "")  # test ids are what they are
    problems = []
    if has_ansi(scrubbed):
        problems.append("carries ANSI escape codes")
    problems += [f"carries harness wording ({found!r})" for found in harness_wording(scrubbed)]
    problems += _source_claim(task, text)
    problems += _unshown_symptoms(task, text)
    problems += [f"reveals the fix: {found}" for found in leaks(text, task)]
    if hint_free and re.search(rf"^\s*{HINT_PREFIX}", text, re.MULTILINE | re.IGNORECASE):
        problems.append("the hint-free text carries a hint")
    return problems


def check_issues(task: Task, issues: TaskIssues) -> list[str]:
    """Every problem of a task's issue texts, each prefixed by the text it was found in
    (empty = the texts are fine)."""
    problems: list[str] = []
    if issues.instance_id != task.instance_id:
        problems.append(f"the texts are of {issues.instance_id}, not of {task.instance_id}")
    for style, issue in sorted(issues.texts.items()):
        for variant, text in (("with hint", issue.with_hint), ("without hint", issue.without_hint)):
            found = check_text(task, text, hint_free=variant == "without hint")
            problems += [f"{style} text ({variant}): {p}" for p in found]
    return problems
