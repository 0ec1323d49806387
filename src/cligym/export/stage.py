"""The export stage: verified TaskInstances → Harbor / Terminal-Bench 1.0 task dirs or JSONL.

The formats are the exporters of :mod:`cligym.export.registry`. Each task's issue texts
(``RUN_DIR/tasks/<id>/issues.json``, written by the issue stage) are read, never written,
here. The ExportReport is saved beside the output directory (``ExportDir.report``): inside
it a harness would take it for a task.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cligym.errors import BadInput
from cligym.export.base import Item
from cligym.export.common import at_least, check_min_difficulty
from cligym.export.publish import pinned_bases, push_task_images
from cligym.export.registry import get_exporter
from cligym.layout import ExportDir, GoldDir, RolloutDir, RunDir, safe_id
from cligym.models.export import ExportReport
from cligym.models.io import load, save
from cligym.models.issue import STYLES, TaskIssues
from cligym.models.registry import RegistryIndex
from cligym.models.task import Label, Task
from cligym.runtime import Runtime


def load_tasks(run_dir: Path) -> list[Task]:
    paths = RunDir(run_dir).task_records()
    if not paths:
        raise BadInput(f"{run_dir} has no tasks (expected RUN_DIR/tasks/*/instance.json from 'cligym invert')")
    return [load(Task, p, "task instance") for p in paths]


def load_issues(run_dir: Path, task: Task) -> TaskIssues:
    """The task's issue texts, saved beside its instance.json by the issue stage."""
    path = RunDir(run_dir).issues(task.instance_id)
    if not path.is_file():
        raise BadInput(f"task {task.instance_id} has no issue texts ({path}); 'cligym export' writes missing ones")
    return load(TaskIssues, path, "issue texts")


#: How many entries of a non-empty output directory are looked through for records.
MAX_SCAN = 200_000


def records_kind(folder: Path) -> str | None:
    """What cligym records ``folder`` holds (a gold, run or rollout directory), if any."""
    if GoldDir(folder).gold.is_file():
        return "a gold directory"
    run = RunDir(folder)
    if run.config.is_file() and run.candidates.is_dir():
        return "a run directory"
    rollout = RolloutDir(folder)
    if rollout.summary.is_file() and any(RolloutDir.records_in(a)[1].is_file() for a in rollout.attempt_dirs()):
        return "a rollout directory"
    return None


def refuse_records(out: Path, run_dir: Path) -> None:
    """BadInput when ``out`` is, holds or lies inside the run being exported or any
    directory of cligym records: replacing it (--force) would delete them."""
    target, run = Path(os.path.abspath(out)), Path(os.path.abspath(run_dir))
    if target == run or target in run.parents or run in target.parents:
        raise BadInput(f"refusing to export into {out}: it is, holds or lies inside the run directory {run_dir}")
    for folder in (target, *target.parents):
        kind = records_kind(folder)
        if kind:
            raise BadInput(f"refusing to export into {out}: {folder} is {kind} (its records would be lost)")
    if not target.is_dir():
        return
    seen = 0
    for here, dirs, files in os.walk(target):
        seen += len(dirs) + len(files)
        kind = records_kind(Path(here))
        if kind:
            raise BadInput(f"refusing to export into {out}: it holds {kind}, {here}")
        if seen > MAX_SCAN:
            raise BadInput(f"refusing to replace {out}: it holds more than {MAX_SCAN} entries; "
                           "choose an empty directory")


def prepare_output(out: ExportDir, force: bool) -> None:
    if not out.is_empty():
        if not force:
            raise BadInput(f"{out.path} exists and is not empty; pass --force to replace it")
        shutil.rmtree(out.path) if out.path.is_dir() else out.path.unlink()
    out.path.mkdir(parents=True, exist_ok=True)


NOT_FAIR = "not offline-fair: its repair needs the network or bytes only the oracle carries"


def offline_fair_only(tasks: list[Task]) -> tuple[list[Task], dict[str, str]]:
    """The tasks whose every operator declares an offline repair, and the others with why
    (the agent path's, which declare nothing, are not known to be fair and are left out too)."""
    kept, left = [], {}
    for task in tasks:
        if task.offline_fair:
            kept.append(task)
        else:
            left[task.instance_id] = (NOT_FAIR if task.offline_fair is False
                                      else "offline fairness unknown (no operator declarations)")
    return kept, left


def hard_enough(tasks: list[Task], minimum: Label) -> tuple[list[Task], dict[str, str], int]:
    """The tasks whose measured label is ``minimum`` or harder, the others with why, and how
    many of those carry no measure (left out by any minimum above easy)."""
    kept, left, unmeasured = [], {}, 0
    for task in tasks:
        if at_least(task, minimum):
            kept.append(task)
        elif task.difficulty is None:
            unmeasured += 1
            left[task.instance_id] = f"difficulty not measured (an older record); --min-difficulty {minimum}"
        else:
            left[task.instance_id] = f"difficulty {task.difficulty.label} is below --min-difficulty {minimum}"
    return kept, left, unmeasured


def check_gold_images(runtime: Runtime, tasks: list[Task]) -> None:
    for image in sorted({t.image_name for t in tasks}):
        if not runtime.image_exists(image):
            raise BadInput(
                f"gold image {image} is not in the Docker engine; load it with "
                "'cligym images load FILE' (saved by 'cligym images save') or rebuild it with 'cligym gold'"
            )


def hub_files(target: ExportDir) -> dict[str, str]:
    """The Parquet file and dataset card the export wrote beside tasks.jsonl, if it did."""
    if target.parquet.is_file() and target.card.is_file():
        return {"parquet": str(target.parquet), "card": str(target.card)}
    return {}


def export(
    run_dir: Path,
    fmt: str,
    out: Path,
    *,
    hint: bool = False,
    style: str = "strong",
    force: bool = False,
    offline_only: bool = True,
    min_difficulty: str | None = None,
    runtime: Runtime | None = None,
    registry: str | None = None,
    task_images: bool = False,
) -> ExportReport:
    """Export every task of ``run_dir`` into ``out`` as ``fmt`` (with ``offline_only``, only
    the offline-fair ones; the others are exported with network access and marked so; with
    ``min_difficulty``, only those whose measured difficulty is at least that label).
    With a runtime, the gold images the tasks build FROM must be in the engine (formats
    that build only). With ``registry``, every task builds FROM its gold image as that
    registry serves it, pinned by digest (pushed first where the registry lacks it); with
    ``task_images`` too, each Harbor task's own image is pushed and named in its task.toml."""
    exporter = get_exporter(fmt)
    if task_images and (not registry or fmt != "harbor"):
        raise BadInput("--task-images needs --registry and the harbor format")
    lowest = check_min_difficulty(min_difficulty)
    if style not in (*STYLES, "seeded"):
        raise BadInput(f"unknown style {style!r}; choose strong, balanced, weak or seeded")
    refuse_records(Path(out), Path(run_dir))
    tasks = load_tasks(run_dir)
    for task in tasks:  # every record's id is checked, also of tasks left out below
        safe_id(task.instance_id, "instance id")
    left_out: dict[str, str] = {}
    if offline_only:
        tasks, left_out = offline_fair_only(tasks)
        if not tasks:
            raise BadInput(f"none of the {len(left_out)} tasks of {run_dir} is offline-fair; "
                           "pass --with-network to export them with network access")
    easier: dict[str, str] = {}
    unmeasured = 0
    if lowest is not None:
        tasks, easier, unmeasured = hard_enough(tasks, lowest)
        if not tasks:
            raise BadInput(f"none of the {len(easier)} tasks of {run_dir} left to export is at least {lowest} "
                           f"({unmeasured} of them unmeasured); lower --min-difficulty")
    items: list[Item] = [(task, load_issues(run_dir, task)) for task in tasks]
    if runtime is not None and exporter.builds_from_gold:
        check_gold_images(runtime, tasks)
    target = ExportDir(Path(out))
    images = sorted({t.image_name for t in tasks})
    pushed = pinned_bases(runtime or Runtime(), registry, Path(run_dir), images) if registry else {}
    pinned = {image: record.pinned for image, record in pushed.items()}
    prepare_output(target, force)
    exporter.export(items, target, style=style, hint=hint,
                    runtime=(runtime or Runtime()) if exporter.builds_from_gold else None, bases=pinned,
                    references=RunDir(run_dir).references)
    images_of_tasks = push_task_images(runtime or Runtime(), registry, target) if task_images else {}
    if pushed:
        save(RegistryIndex(images=[*pushed.values(), *images_of_tasks.values()]), target.registry)
    report = ExportReport(format=fmt, hint=hint, style=style, output=str(out), gold_images=images,
                          registry=registry, gold_pinned=pinned,
                          task_images={name: record.pinned for name, record in images_of_tasks.items()},
                          tasks=[t.instance_id for t in tasks], left_out=left_out | easier,
                          offline_only=offline_only, min_difficulty=lowest, below_min_difficulty=len(easier),
                          unmeasured_left_out=unmeasured, **hub_files(target))
    save(report, target.report)
    return report
