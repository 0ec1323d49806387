"""What an issue text must not reveal (the fix), and the hint filter.

Every text is redacted so it never names a path the delta changed; ``leaks`` checks that
no solution command, ΔD line or changed path remains. The hint-free twin of a text is made
by ``strip_hint``, a rule-based filter.
"""

from __future__ import annotations

import re

from cligym.models.task import Task

HINT_PREFIX = "Hint:"
PATH = re.compile(r"(/[\w.@+-]+)+/?")


def changed_paths(task: Task) -> list[str]:
    """Every absolute path the delta changed, plus the paths named in ΔD and solution."""
    paths = set(task.changed_paths)
    for line in [*task.dockerfile, *task.solution.splitlines()]:
        paths.update(m.group(0).rstrip("/") for m in PATH.finditer(line) if m.group(0).count("/") >= 2)
    return sorted((p for p in paths if len(p) > 4), key=len, reverse=True)


def delta_paths(task: Task) -> list[str]:
    """The paths the delta touches: what it changed, and the absolute paths its ΔD lines
    name (not the solution's, which may name paths it only reads)."""
    paths = set(task.changed_paths)
    for line in task.dockerfile:
        paths.update(m.group(0).rstrip("/") for m in PATH.finditer(line) if m.group(0).count("/") >= 1)
    return sorted(p for p in paths if p.startswith("/") and len(p) > 1)


def redact(text: str, task: Task) -> str:
    """Replace every changed path by '…/<basename>' so no text names where the fix goes."""
    for path in changed_paths(task):
        text = text.replace(path, "…/" + path.rsplit("/", 1)[-1])
    return text


#: Lines of a repair script that are its frame, not a repair: ``set -e``, a composite's steps.
SCRIPT_FRAME = re.compile(r'^(set -e|retry=""|undo_\d+\(\) \{|undo_\d+ \|\| retry=.*|for step in \$retry; .*)$')


def leaks(text: str, task: Task) -> list[str]:
    """The fix-revealing strings found in ``text`` (empty when it is clean)."""
    found = []
    for line in task.dockerfile:
        if line.strip() and line.strip() in text:
            found.append(f"ΔD line: {line.strip()[:80]}")
    for line in task.solution.splitlines():
        stripped = line.strip().removesuffix("&&").strip()
        if len(stripped) > 3 and not stripped.startswith("#") and not SCRIPT_FRAME.match(stripped) and stripped in text:
            found.append(f"solution line: {stripped[:80]}")
    for path in changed_paths(task):
        if re.search(re.escape(path) + r"(?![\w.-])", text):
            found.append(f"changed path: {path}")
    return found


def strip_hint(text: str) -> str:
    """The rule-based filter: drop every paragraph that starts with 'Hint:'."""
    paragraphs = re.split(r"\n\s*\n", text.strip())
    kept = [p for p in paragraphs if not p.lstrip().lower().startswith(HINT_PREFIX.lower())]
    return "\n\n".join(kept).strip() + "\n"
