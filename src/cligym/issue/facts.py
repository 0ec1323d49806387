"""What a task's issue text may state, decided from the task's evidence.

- A symptom: an operator's symptom only when one of its ``shows`` patterns matches an F2P
  error (of the tests it is responsible for, ``fixes``, when it has any); otherwise a
  sentence made from the observed errors themselves. Older records (no ``applied``) state a
  recorded symptom only when the errors back it (``backed``); agent-made tasks keep the
  query model's symptom.
- That the project's source is unchanged: only when nothing the delta touches lies under
  the working directory (and no operator of the ``code`` category took part).
"""

from __future__ import annotations

import re
from collections import Counter

from cligym.issue.clean import DID_NOT_RUN, clean_error, exception_type, key_error
from cligym.issue.redact import delta_paths
from cligym.models.task import AppliedChange, Task

#: Claims that the project itself was not changed, in the words a text may use.
SOURCE_CLAIMS = [
    r"source (code )?(is|was|has been|remains) (unchanged|untouched|unmodified|not (been )?(changed|modified|touched))",
    r"(nobody|no one|no-one|none of us) (has |have )?(touched|changed|modified|edited) the (code|source|project)",
    r"(code|source|project( files)?) (is|are|was|were|has been|have been|remains?) (unchanged|untouched|unmodified)",
    r"without (any )?changes? to the (code|source)",
]
#: Exception names and quoted phrases of a recorded symptom: the words errors must show.
TOKENS = re.compile(r"\b([A-Za-z_][\w.]*(?:Error|Exception|Exit))\b|'([^'{}]{4,})'|\"([^\"{}]{4,})\"")


def _errors(task: Task, tests: list[str] | None = None) -> list[str]:
    chosen = tests if tests else sorted(task.FAIL_TO_PASS)
    return [clean_error(task.errors.get(t, "")) for t in chosen]


def _search(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text, re.IGNORECASE) is not None
    except re.error:
        return False


def shown(op: AppliedChange, task: Task) -> bool:
    """Does an F2P error show this operator's symptom? Its ``shows`` patterns are tried on
    the errors of the F2P tests it is responsible for (``fixes``), else of every F2P test."""
    if not op.shows:
        return False
    mine = [t for t in op.fixes if t in set(task.FAIL_TO_PASS)]
    errors = _errors(task, mine)
    return any(_search(p, e) for p in op.shows for e in errors if e)


def backed(symptom: str, task: Task) -> bool:
    """Do the errors back a recorded symptom (older records, no ``shows``)? Yes when one of
    its exception names or quoted phrases occurs in the line that says what failed in some
    F2P error (its exception line)."""
    tokens = [next(g for g in m.groups() if g) for m in TOKENS.finditer(symptom)]
    tokens = [t for t in tokens if "..." not in t and "…" not in t]
    keys = [key_error(e) for e in _errors(task)]
    return any(re.search(rf"(?<!\w){re.escape(t)}(?!\w)", k, re.IGNORECASE) for t in tokens for k in keys if k)


def _dedupe(texts: list[str]) -> list[str]:
    seen, kept = set(), []
    for text in texts:
        text = text.strip()
        norm = normal(text)
        if text and norm not in seen:
            seen.add(norm)
            kept.append(text)
    return kept


def stated_symptoms(task: Task) -> list[str]:
    """The symptom sentences a text may state as the breakage's description."""
    if task.origin == "agent":
        return _dedupe([s for s in task.symptoms if s])
    if task.applied:
        return _dedupe([op.symptom for op in task.applied if op.symptom and shown(op, task)])
    return _dedupe([s for s in task.symptoms if s and backed(s, task)])


def unstated_symptoms(task: Task) -> list[tuple[str, str]]:
    """(name, symptom) of every symptom a text must not state: the errors do not show it."""
    if task.origin == "agent":
        return []
    allowed = {normal(s) for s in stated_symptoms(task)}
    if task.applied:
        pairs = [(op.name, op.symptom) for op in task.applied]
    else:
        pairs = [(f"symptom {i + 1}", s) for i, s in enumerate(task.symptoms)]
    return [(name, s) for name, s in pairs if s.strip() and normal(s) not in allowed]


def error_sentence(task: Task) -> str:
    """A sentence made from the observed errors: the most common line that says what failed
    (by exception type, then message) among the F2P errors; "" when none says anything."""
    keys = [k for k in (key_error(e) for e in _errors(task)) if k]
    if not keys:
        return ""
    by_type = Counter(exception_type(k) or k for k in keys)
    kind, _ = by_type.most_common(1)[0]
    line, count = Counter(k for k in keys if (exception_type(k) or k) == kind).most_common(1)[0]
    total = len(task.FAIL_TO_PASS)
    if line.startswith(DID_NOT_RUN):
        why = line[len(DID_NOT_RUN):].strip()
        if count == total:
            who = "None of them ran" if total > 1 else "It did not run"
        else:
            who = f"{count} of the {total} failing tests did not run"
        return f"{who}{' ' + why if why else ''}."
    if count == total:
        who = "All of them report" if total > 1 else "It reports"
    elif count * 2 > total:
        who = "Most of them report"
    else:
        who = f"{count} of the {total} failing tests {'reports' if count == 1 else 'report'}"
    return f"{who} `{line}`."


def source_changed(task: Task) -> bool:
    """Does the delta touch anything under the working directory (or the project's code)?"""
    root = task.workdir.rstrip("/") + "/"
    return "code" in task.categories or any(p.startswith(root) for p in delta_paths(task))


def source_claims(text: str) -> list[str]:
    """The claims of an unchanged source found in ``text``."""
    flat = " ".join(text.split())
    return [m.group(0) for p in SOURCE_CLAIMS for m in [re.search(p, flat, re.IGNORECASE)] if m]


def normal(text: str) -> str:
    """Lower case, one space between words, no closing full stop: for comparing sentences."""
    return " ".join(text.lower().split()).rstrip(" .")
