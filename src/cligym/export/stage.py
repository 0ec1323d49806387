"""The export stage: verified TaskInstances → Harbor / Terminal-Bench 1.0 task dirs or JSONL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from cligym.errors import BadInput
from cligym.invert.models import TaskInstance
from cligym.issue import TaskIssues, write_issues
from cligym.records import load, save, write_atomic
from cligym.runtime import Runtime

Format = Literal["harbor", "tb", "jsonl"]
FORMATS = ("harbor", "tb", "jsonl")
EXPORT_FILE = "cligym-export.json"


class ExportReport(BaseModel):
    format: str
    hint: bool
    style: str
    tasks: list[str] = Field(default_factory=list)
    output: str
    gold_images: list[str] = Field(default_factory=list)


def load_tasks(run_dir: Path) -> list[TaskInstance]:
    paths = sorted((run_dir / "tasks").glob("*/instance.json")) if run_dir.is_dir() else []
    if not paths:
        raise BadInput(f"{run_dir} has no tasks (expected RUN_DIR/tasks/*/instance.json from 'cligym invert')")
    return [load(TaskInstance, p, "task instance") for p in paths]


def issues_for(run_dir: Path, task: TaskInstance) -> TaskIssues:
    """The task's issue texts, written once and kept beside instance.json."""
    path = run_dir / "tasks" / task.instance_id / "issues.json"
    if path.is_file():
        return load(TaskIssues, path)
    issues = write_issues(task)
    save(issues, path)
    return issues


def problem_statement(issues: TaskIssues, style: str, hint: bool) -> str:
    text = issues.texts[style]
    return text.with_hint if hint else text.without_hint


def prepare_output(out: Path, force: bool) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not force:
            raise BadInput(f"{out} exists and is not empty; pass --force to replace it")
        shutil.rmtree(out) if out.is_dir() else out.unlink()
    out.mkdir(parents=True, exist_ok=True)


def check_gold_images(runtime: Runtime | None, tasks: list[TaskInstance]) -> None:
    if runtime is None:
        return
    for image in sorted({t.image_name for t in tasks}):
        if not runtime.image_exists(image):
            raise BadInput(
                f"gold image {image} is not in the Docker engine; load it with "
                "'cligym images load FILE' (saved by 'cligym images save') or rebuild it with 'cligym gold'"
            )


def export(
    run_dir: Path,
    fmt: str,
    out: Path,
    *,
    hint: bool = False,
    style: str = "strong",
    force: bool = False,
    runtime: Runtime | None = None,
) -> ExportReport:
    from cligym.export import harbor, jsonl, tb

    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if style not in ("strong", "balanced", "weak"):
        raise BadInput(f"unknown style {style!r}; choose strong, balanced or weak")
    tasks = load_tasks(run_dir)
    check_gold_images(runtime, tasks)
    prepare_output(out, force)
    report = ExportReport(format=fmt, hint=hint, style=style, output=str(out),
                          gold_images=sorted({t.image_name for t in tasks}))
    rows = []
    for task in tasks:
        issues = issues_for(run_dir, task)
        if fmt == "jsonl":
            rows.append(jsonl.row(task, issues, style))
        else:
            writer = harbor.write_task if fmt == "harbor" else tb.write_task
            writer(task, problem_statement(issues, style, hint), out / task.instance_id)
        report.tasks.append(task.instance_id)
    if fmt == "jsonl":
        write_atomic(out / "tasks.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    save(report, out / EXPORT_FILE)
    return report
