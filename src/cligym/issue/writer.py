"""Offline issue texts: three levels of guidance, each with a hint and a hint-free twin.

The texts are filled from templates written for cligym, varied per task (a generator seeded
by the instance id picks among phrasings), from the failing test ids, their cleaned error
excerpts (``clean``), the symptoms the errors show and the operators' hint texts
(``facts``). The hint-free twin is made by a rule-based filter (``strip_hint``), and every
text is redacted so it never names a path the delta changed (``redact``); ``check_issues``
tells whether a text keeps to all of this.
"""

from __future__ import annotations

import random
from pathlib import Path

from cligym.issue.clean import error_lines, key_error
from cligym.issue.facts import error_sentence, source_changed, stated_symptoms
from cligym.issue.redact import HINT_PREFIX, redact, strip_hint
from cligym.models.issue import STYLES, IssueText, TaskIssues
from cligym.layout import RunDir
from cligym.models.io import load, save
from cligym.models.task import Task

#: Openings, as (several failing tests, one failing test) like the asks below. Those that
#: claim the project's code is as it was: only for a delta that leaves it so.
CLAIMING_OPENINGS = [("Tests in {project} started failing and nobody touched the code.",
                      "A test in {project} started failing and nobody touched the code.")]
OPENINGS = [
    ("Our {project} test run has gone red.", "Our {project} test run has gone red."),
    ("Something in the environment broke part of the {project} test suite.",
     "Something in the environment broke part of the {project} test suite."),
    ("The {project} checkout no longer passes its own tests.",
     "The {project} checkout no longer passes its own tests."),
    ("After the last change to this machine, {project}'s tests fail.",
     "After the last change to this machine, a {project} test fails."),
]
#: Each ask as (several failing tests, one failing test): one pick, in number with the text.
ASKS_STRONG = [
    (("Please find the root cause in the environment and repair it so these tests pass again. "
      "Do not edit the tests or skip them."),
     ("Please find the root cause in the environment and repair it so this test passes again. "
      "Do not edit the test or skip it.")),
    (("Track down what in the environment causes this and fix it; the tests themselves are correct "
      "and must not be changed."),
     ("Track down what in the environment causes this and fix it; the test itself is correct "
      "and must not be changed.")),
    (("Find out why the environment produces these errors and restore it so the suite passes "
      "again, without touching the tests."),
     ("Find out why the environment produces this error and restore it so the suite passes "
      "again, without touching the test.")),
]
ASKS_BALANCED = [
    ("Please investigate and get them passing again without changing the tests.",
     "Please investigate and get it passing again without changing the test."),
    ("Figure out what is wrong and fix it; the tests should not be modified.",
     "Figure out what is wrong and fix it; the test should not be modified."),
    ("Get the suite green again (leave the tests as they are).",
     "Get the suite green again (leave the test as it is)."),
]
ASKS_WEAK = [
    ("They used to pass. Please make them pass again.", "It used to pass. Please make it pass again."),
    ("These passed before. Fix whatever is needed so they pass.",
     "It passed before. Fix whatever is needed so it passes."),
    ("This worked until recently; please restore it.", "This worked until recently; please restore it."),
]
HINT_LEADS = ["Look at", "The problem is related to", "It may help to check", "Consider"]


def _number(n: int, several: str, one: str) -> str:
    """``one`` when a text speaks of one failing test, else ``several``."""
    return one if n == 1 else several


def _pick(rng: random.Random, asks: list[tuple[str, str]], n: int) -> str:
    """One phrasing, picked as from a list of single strings (the same pick for the same seed)."""
    return _number(n, *rng.choice(asks))


def _test_list(tests: list[str], limit: int) -> str:
    shown = [f"- `{t}`" for t in tests[:limit]]
    if len(tests) > limit:
        shown.append(f"- … and {len(tests) - limit} more")
    return "\n".join(shown)


def _hint(rng: random.Random, task: Task) -> str:
    if task.origin == "agent" and any(h.strip() for h in task.hints):
        # the query model's recovery strategy: whole sentences, not a noun phrase
        text = " ".join(h.strip() for h in task.hints if h.strip())
        return f"{HINT_PREFIX} {text if text.endswith(('.', '!', '?')) else text + '.'}"
    hints = [h.strip().rstrip(".") for h in task.hints if h and h.strip()]
    hints = [h[0].lower() + h[1:] for h in dict.fromkeys(hints)]
    body = "; and ".join(hints) if hints else "the environment the tests run in"
    return f"{HINT_PREFIX} {rng.choice(HINT_LEADS)} {body}."


def _symptom(task: Task) -> str:
    """The symptoms the observed errors show (deduplicated), else a sentence made from the
    errors themselves."""
    sentences = [s.rstrip(".") + "." for s in stated_symptoms(task)]
    return " ".join(sentences) if sentences else error_sentence(task)


def _examples(task: Task, f2p: list[str]) -> list[str]:
    """The tests whose errors a text quotes: one per distinct error (up to three), at least
    two when there are two with a message."""
    with_error = [t for t in f2p if key_error(task.errors.get(t, ""))]
    seen: dict[str, str] = {}
    for test in with_error:
        seen.setdefault(key_error(task.errors[test]), test)
    picked = list(seen.values())[:3]
    picked += [t for t in with_error if t not in picked][: max(0, 2 - len(picked))]
    return sorted(picked, key=f2p.index)


def _strong(rng: random.Random, task: Task, opening: str, f2p: list[str]) -> str:
    claim = "" if source_changed(task) else " The project's source is unchanged."
    excerpts = [f"{test}:\n{error_lines(task.errors.get(test, ''), 12)}" for test in _examples(task, f2p)]
    symptom = _symptom(task)
    n = len(f2p)
    failed = _number(n, f"{n} tests that passed before now fail", "1 test that passed before now fails")
    return (
        f"{opening}{claim} {failed}"
        f" when run from `{task.workdir}` with `{task.test_command}`:\n\n{_test_list(f2p, 12)}\n\n"
        + (f"{_number(n, 'The errors they report', 'The error it reports')}:\n\n```\n{chr(10).join(excerpts)}\n```\n\n"
           if excerpts else "")
        + (f"{symptom}\n\n" if symptom else "")
        + f"{_pick(rng, ASKS_STRONG, n)}\n\n{_hint(rng, task)}\n"
    )


def _balanced(rng: random.Random, task: Task, opening: str, f2p: list[str]) -> str:
    n = len(f2p)
    example = next(((t, key_error(task.errors.get(t, ""))) for t in f2p if key_error(task.errors.get(t, ""))), None)
    failed = _number(n, f"{n} tests fail, for example", "1 test fails:")
    if example:
        said = f" {failed} `{example[0]}`, with:\n\n    {example[1]}\n\n"
    else:
        said = f" {failed} `{f2p[0]}`.\n\n"
    return f"{opening}{said}{_pick(rng, ASKS_BALANCED, n)}\n\n{_hint(rng, task)}\n"


def write_issues(task: Task) -> TaskIssues:
    """The three texts of a task, each with its hint-free twin, all redacted."""
    rng = random.Random(task.instance_id)
    project = task.project
    f2p = sorted(task.FAIL_TO_PASS)
    n = len(f2p)
    openings = OPENINGS if source_changed(task) else CLAIMING_OPENINGS + OPENINGS
    opening = _pick(rng, openings, n).format(project=project)
    strong = _strong(rng, task, opening, f2p)
    balanced = _balanced(rng, task, opening, f2p)
    files = sorted({t.split("::")[0] for t in f2p})
    where = f"in {', '.join(f'`{f}`' for f in files[:4])}{' and more' if len(files) > 4 else ''}"
    failing = _number(n, f"Some tests of {project} fail ({n} of them, {where})",
                      f"One test of {project} fails ({where})")
    weak = f"{failing}. {_pick(rng, ASKS_WEAK, n)}\n\n{_hint(rng, task)}\n"
    texts = {}
    for style, text in zip(STYLES, (strong, balanced, weak), strict=True):
        text = redact(text, task)
        texts[style] = IssueText(style=style, with_hint=text, without_hint=strip_hint(text))
    return TaskIssues(instance_id=task.instance_id, texts=texts)


def write_missing_issues(run_dir: Path) -> None:
    """Issue texts for every task of a run that has none (runs made before the issue stage
    saved them beside each task)."""
    run = RunDir(run_dir)
    for path in run.task_records():
        task = load(Task, path, "task instance")
        if not run.issues(task.instance_id).is_file():
            save(write_issues(task), run.issues(task.instance_id))
