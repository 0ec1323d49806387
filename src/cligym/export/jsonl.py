"""One JSONL row per task, in the SWE-smith style; loadable with datasets' json loader. Beside
tasks.jsonl go the same rows as Parquet with a dataset card (``cligym.export.hub``), which
``datasets.load_dataset(folder)`` reads."""

from __future__ import annotations

import json
from collections.abc import Mapping

from cligym.export.base import Exporter, Item, shipped
from cligym.layout import ExportDir, TaskTable
from cligym.models.export import TaskRow
from cligym.models.io import write_atomic
from cligym.models.issue import TaskIssues
from cligym.models.task import Task


def row(task: Task, issues: TaskIssues, style: str) -> TaskRow:
    text = issues.text(style)
    return TaskRow(
        instance_id=task.instance_id, repo=task.repo, image_name=task.image_name, dockerfile="\n".join(task.dockerfile),
        FAIL_TO_PASS=task.FAIL_TO_PASS, PASS_TO_PASS=task.PASS_TO_PASS, problem_statement=text.without_hint,
        problem_statement_hint=text.with_hint, category=task.category, operators=task.operators,
        solution=task.solution, test_command=task.test_command, workdir=task.workdir,
        offline_fair=task.offline_fair, difficulty=task.difficulty, scenario=task.scenario,
    )


def line(task_row: TaskRow) -> str:
    """The row as one JSON line (``json.dumps``' spacing, as rows have always been written)."""
    return json.dumps(task_row.model_dump(mode="json")) + "\n"


def write_rows(where: TaskTable, rows: list[TaskRow]) -> None:
    """tasks.jsonl, then the same rows as Parquet and the dataset card that names it."""
    from cligym.export.hub import write_hub_files  # pyarrow and huggingface_hub load in ~1 s: only here

    write_atomic(where.jsonl, "".join(line(r) for r in rows))
    write_hub_files(where, rows)


def read_rows(out: ExportDir) -> list[TaskRow]:
    """The rows of an exported tasks.jsonl."""
    return [TaskRow.model_validate_json(text) for text in out.jsonl.read_text(encoding="utf-8").splitlines()
            if text.strip()]


class JsonlExporter(Exporter):
    """Both problem statements go into every row, so ``--hint`` does not apply."""

    name = "jsonl"
    builds_from_gold = False

    def export(self, items: list[Item], out: ExportDir, *, style: str, hint: bool, runtime=None,
               bases: Mapping[str, str] | None = None, references=None) -> None:
        write_rows(out, [row(shipped(task, bases), issues, style) for task, issues in items])
