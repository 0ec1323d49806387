"""Issue texts written by a model (``cligym export --issue-writer llm``): one guidance
style per task, chosen by seed, with a hint that says where to look and never what to do.

The model sees what a user reporting the failure would see — the project, failing test
ids, cleaned error lines (redacted like a template's text), the area the breakage lies in —
never the delta, the solution or the changed paths. Its text must pass the same checks as
a template's (``check_text``: no ΔD or solution line, no changed path, no symptom the
errors do not show, no harness wording); a refused text is sent back once with the problems named, and a second refusal
leaves the template's text. The other two styles stay the template's.
"""

from __future__ import annotations

import random
from pathlib import Path

from cligym.agents.answers import last_json_object
from cligym.issue.check import check_text
from cligym.issue.clean import key_error
from cligym.issue.redact import HINT_PREFIX, redact, strip_hint
from cligym.issue.writer import write_issues
from cligym.layout import RunDir
from cligym.models.io import load, save
from cligym.models.issue import STYLES, IssueText, TaskIssues
from cligym.models.task import Task

GUIDES = {
    "strong": ("Detailed: name the failing tests and quote the decisive error lines, describe what goes "
               "wrong as a user sees it, and say that the tests must not be changed."),
    "balanced": "Moderate: summarise which tests fail and with what kind of error, in a short paragraph.",
    "weak": "Terse: a sentence or two saying that some tests of the project fail and should pass again.",
}
SYSTEM = """You write bug reports for a maintenance team. A Python project's test suite used to
pass; now some tests fail because something in the machine's environment changed. Write the
report the way a developer who only saw the failures would: symptoms, never causes you were
not shown. Answer with one JSON object: {"issue": "...", "hint": "..."}. The hint is one
sentence naming the area to look into (for example the dynamic loader, the import path, a
package's installed files); it must not say what to change, which file, or which command."""
PROMPT = """Project: {project}
Failing {tests_word} ({n}):
{tests}
Error lines {they_show}:
{errors}
Area of the breakage: {area}

Style of the report: {guide}"""


def chosen_style(task: Task, seed: int) -> str:
    """The style a task's model-written text takes: the same for the same seed and task."""
    return STYLES[random.Random(f"{seed}:{task.instance_id}").randrange(len(STYLES))]


def _prompt(task: Task, style: str) -> str:
    f2p = sorted(task.FAIL_TO_PASS)
    # redacted as a template's text is: a path the delta changed would point at the fix
    errors = list(dict.fromkeys(redact(key_error(task.errors[t]), task) for t in f2p if task.errors.get(t)))[:6]
    one = len(f2p) == 1
    return PROMPT.format(project=task.repo, n=len(f2p), tests_word="test" if one else "tests",
                         they_show="it shows" if one else "they show", tests="\n".join(f"  {t}" for t in f2p[:10]),
                         errors="\n".join(f"  {e}" for e in errors) or "  (none recorded)",
                         area="; ".join(dict.fromkeys(h for h in task.hints if h)) or "the environment",
                         guide=GUIDES[style])


def _text(answer: dict | None) -> str | None:
    """The report with its hint paragraph, from the model's JSON answer."""
    if not answer or not isinstance(answer.get("issue"), str) or not answer["issue"].strip():
        return None
    hint = answer.get("hint") if isinstance(answer.get("hint"), str) else ""
    issue = answer["issue"].strip()
    return f"{issue}\n\n{HINT_PREFIX} {hint.strip()}\n" if hint.strip() else issue + "\n"


def llm_issues(task: Task, client, seed: int = 0) -> TaskIssues:
    """The task's issues with ``chosen_style``'s text from ``client`` (the template's when
    the model's is refused twice); tokens and refusals are recorded."""
    style = chosen_style(task, seed)
    issues = write_issues(task)
    issues.style = style
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": _prompt(task, style)}]
    for _ in range(2):
        reply = client.chat(messages)
        issues.prompt_tokens += reply.usage.prompt_tokens
        issues.completion_tokens += reply.usage.completion_tokens
        with_hint = _text(last_json_object(reply.content, "issue"))
        if with_hint is None:
            problems = ['the answer is not a JSON object with a non-empty "issue"']
        else:
            problems = check_text(task, with_hint) + check_text(task, strip_hint(with_hint), hint_free=True)
            if not problems:
                issues.texts[style] = IssueText(style=style, with_hint=with_hint, without_hint=strip_hint(with_hint))
                issues.writer = "llm"
                return issues
        issues.refused.append("; ".join(problems)[:500])
        messages += [{"role": "assistant", "content": reply.content},
                     {"role": "user", "content": "That report cannot be used: " + "; ".join(problems)
                      + ". Write it again, as the same JSON object."}]
    return issues


def write_llm_issues(run_dir: Path, client, seed: int = 0) -> tuple[int, int]:
    """Model-written texts for every task of a run that has none yet; (written, refused)."""
    run = RunDir(run_dir)
    written = refused = 0
    for path in run.task_records():
        task = load(Task, path, "task instance")
        target = run.issues(task.instance_id)
        if target.is_file():
            done = load(TaskIssues, target, "issue texts")
            if done.writer == "llm" or done.refused:  # written, or tried twice already
                continue
        issues = llm_issues(task, client, seed)
        save(issues, target)
        written += issues.writer == "llm"
        refused += issues.writer != "llm"
    return written, refused
