"""Pieces shared by the task-directory exporters."""

from __future__ import annotations

import re
from pathlib import Path

import tomli_w

from cligym.errors import BadInput
from cligym.models.task import LABELS, Label, Task

#: How far the symptom lies from its cause, by category: 0 when the error names what is
#: broken (a missing package), 1 when it points near it, 2 when the cause sits in another
#: layer than the error (the dynamic loader, bytecode, locales, the interpreter's set-up).
DISTANCE = {
    "dependency_versions": 1, "package_files": 1, "package_metadata": 1, "environment_variables": 1,
    "filesystem_permissions": 0, "certificates": 1, "system_files": 1, "time_zone_data": 1, "code": 1,
    "import_system": 2, "dynamic_linking": 2, "bytecode": 2, "locale_encoding": 2, "interpreter_venv": 2,
    "test_configuration": 1,
}
ERROR_KIND = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning|Exit))\b")


def necessary_operators(task: Task) -> int:
    """The changes minimality found necessary (the agent path's one change when it has none)."""
    return sum(a.necessary is not False for a in task.applied) if task.applied else 1


def error_kinds(task: Task) -> list[str]:
    """The distinct exception kinds the F2P errors end in (the last one each names)."""
    kinds = set()
    for message in task.errors.values():
        found = ERROR_KIND.findall(message)
        kinds.add(found[-1] if found else "assertion or other")
    return sorted(kinds)


def evidence_difficulty(task: Task) -> str:
    """From evidence, not from a count of operators: every necessary operator beyond the
    first adds 2, every distinct kind of failure beyond the first adds 1, and how far the
    symptom lies from its cause adds 0–2 (``DISTANCE``, the farthest category). Used where
    difficulty is not measured (the agent path)."""
    distance = max((DISTANCE.get(c, 1) for c in task.categories), default=1)
    score = 2 * (necessary_operators(task) - 1) + max(0, len(error_kinds(task)) - 1) + distance
    return "easy" if score <= 1 else "medium" if score <= 3 else "hard"


def difficulty(task: Task) -> str:
    """The measured label (``Task.difficulty``), else the evidence-based score."""
    return task.difficulty.label if task.difficulty is not None else evidence_difficulty(task)


def measured_metadata(task: Task) -> dict:
    """The measure behind the label as metadata keys (none without a measure), and the
    scenario when set (``toml_document`` leaves None out)."""
    d = task.difficulty
    measured = {"difficulty_k": d.k, "reveal_depth": d.reveal_depth, "culprit_named": d.culprit_named,
                "sweeper_solves": d.sweeper_solves, "repair_breadth": d.breadth,
                "subsystems": d.subsystems} if d else {}
    return {**measured, "scenario": task.scenario or None}


def check_min_difficulty(value: str | None) -> Label | None:
    """``--min-difficulty``'s value, checked (BadInput names the choices)."""
    if value is None:
        return None
    if value not in LABELS:
        raise BadInput(f"unknown difficulty {value!r}; choose {', '.join(LABELS[:-1])} or {LABELS[-1]}")
    return value  # type: ignore[return-value]


def at_least(task: Task, minimum: Label) -> bool:
    """Whether the task's measured label is ``minimum`` or harder (easy < medium < hard).
    A task without a measure passes only ``easy``, the filter that leaves nothing out."""
    if task.difficulty is None:
        return minimum == LABELS[0]
    return LABELS.index(task.difficulty.label) >= LABELS.index(minimum)


def task_name(task: Task) -> str:
    """A Harbor ``org/name``: letters, digits, dot, dash, underscore."""
    return "cligym/" + re.sub(r"[^A-Za-z0-9._-]", "-", task.instance_id).strip("-.")


def dockerfile(task: Task) -> str:
    return "\n".join([
        f"# cligym task {task.instance_id}: the gold environment of {task.repo}, then its breakage",
        f"FROM {task.image_name}",
        *task.dockerfile,
        f"WORKDIR {task.workdir}",
    ]) + "\n"


def toml_document(top: dict, sections: dict[str, dict]) -> str:
    """A TOML document: ``top``'s keys, then one table per section (None values left out)."""
    document = {**top, **{name: {k: v for k, v in table.items() if v is not None} for name, table in sections.items()}}
    return tomli_w.dumps(document)


def write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
