"""What ``cligym report`` reads: any mix of gold, run, export, rollout and curate
directories, ``cligym demo`` outputs and whole datasets, each recognised by its records.
Nothing here computes a figure (``cligym.report.figures`` does)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from cligym.errors import BadInput
from cligym.layout import CurateDir, DatasetDir, DemoDir, ExportDir, GoldDir, RolloutDir, RunDir, TaskDir
from cligym.models.curate import CurationSummary
from cligym.models.dataset import DatasetSummary
from cligym.models.export import ExportReport
from cligym.models.gold import GoldEnv
from cligym.models.io import load
from cligym.models.issue import TaskIssues
from cligym.models.rollout import RolloutResult, RolloutSummary
from cligym.models.run import InvertConfig
from cligym.models.task import Candidate, Task
from cligym.models.validate import TaskValidation, ValidationReport


@dataclass
class ExportedTask:
    name: str
    folder: Path
    format: str
    category: str = ""
    difficulty: str = ""


@dataclass
class Export:
    path: Path
    report: ExportReport | None
    tasks: list[ExportedTask]


@dataclass
class Run:
    path: Path
    config: InvertConfig
    candidates: list[Candidate]
    tasks: list[Task]
    issues: dict[str, TaskIssues]


@dataclass
class Rollout:
    summary: RolloutSummary | None
    results: list[RolloutResult]


@dataclass
class Sources:
    inputs: list[str] = field(default_factory=list)
    golds: list[GoldEnv] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    exports: list[Export] = field(default_factory=list)
    validations: list[TaskValidation] = field(default_factory=list)
    rollouts: list[Rollout] = field(default_factory=list)
    curations: list[CurationSummary] = field(default_factory=list)
    datasets: list[DatasetSummary] = field(default_factory=list)


def collect(paths: list[Path]) -> Sources:
    """Every record below ``paths``; BadInput for a path that holds none of cligym's."""
    if not paths:
        raise BadInput("give at least one gold, run, export, rollout, curate, demo or dataset directory")
    sources = Sources(inputs=[str(p) for p in paths])
    for path in paths:
        if not path.is_dir():
            raise BadInput(f"{path} is not a directory")
        if not _add(sources, path):
            raise BadInput(f"{path} is not a gold, run, export, rollout, curate, demo or dataset directory")
    return sources


def _add(sources: Sources, path: Path) -> bool:
    """Add what ``path`` holds; False when it holds nothing cligym made."""
    dataset, demo = DatasetDir(path), DemoDir(path)
    if dataset.plan.is_file() and dataset.ledger.is_file():
        _add_dataset(sources, dataset)
    elif GoldDir(path).gold.is_file():
        sources.golds.append(GoldDir(path).load())
    elif RunDir(path).config.is_file():
        sources.runs.append(_run(RunDir(path)))
    elif CurateDir(path).sft.is_file():
        sources.curations.append(load(CurationSummary, CurateDir(path).summary, "curation summary"))
    elif GoldDir(demo.gold).gold.is_file() or RunDir(demo.run).config.is_file():
        return all(_add(sources, p) for p in (demo.gold, demo.run, demo.tasks) if p.is_dir())
    elif _task_dirs(path):
        _add_export(sources, ExportDir(path))
    elif any(RolloutDir.records_in(folder)[1].is_file() for folder in RolloutDir(path).attempt_dirs()):
        sources.rollouts.append(_rollout(RolloutDir(path)))
    else:
        return False
    return True


def _add_dataset(sources: Sources, dataset: DatasetDir) -> None:
    if dataset.summary.is_file():
        sources.datasets.append(load(DatasetSummary, dataset.summary, "dataset summary"))
    for key in dataset.project_keys():
        if GoldDir(dataset.gold(key)).gold.is_file():
            sources.golds.append(GoldDir(dataset.gold(key)).load())
        if RunDir(dataset.run(key)).config.is_file():
            sources.runs.append(_run(RunDir(dataset.run(key))))
    if _task_dirs(dataset.harbor.path):
        sources.exports.append(_export(dataset.harbor))
    for record in dataset.validation_records():
        sources.validations.append(load(TaskValidation, record, "task validation"))


def _add_export(sources: Sources, export: ExportDir) -> None:
    sources.exports.append(_export(export))
    if export.validation.is_file():
        sources.validations += load(ValidationReport, export.validation, "validation report").results


def _run(run: RunDir) -> Run:
    candidates = [load(Candidate, p, "candidate") for p in run.candidate_records().values()]
    tasks = [load(Task, p, "task") for p in run.task_records()]
    issues = {t.instance_id: load(TaskIssues, run.issues(t.instance_id), "issue texts")
              for t in tasks if run.issues(t.instance_id).is_file()}
    return Run(run.path, load(InvertConfig, run.config, "run config"), candidates, tasks, issues)


def _rollout(rollout: RolloutDir) -> Rollout:
    summary = load(RolloutSummary, rollout.summary, "rollout summary") if rollout.summary.is_file() else None
    results = [load(RolloutResult, RolloutDir.records_in(folder)[1], "rollout result")
               for folder in rollout.attempt_dirs() if RolloutDir.records_in(folder)[1].is_file()]
    return Rollout(summary, results)


def _task_dirs(path: Path) -> list[TaskDir]:
    if not path.is_dir():
        return []
    return [TaskDir(p) for p in sorted(path.iterdir()) if p.is_dir() and TaskDir(p).format is not None]


def _export(export: ExportDir) -> Export:
    report = load(ExportReport, export.report, "export report") if export.report.is_file() else None
    return Export(export.path, report, [_exported(task) for task in _task_dirs(export.path)])


def _exported(task: TaskDir) -> ExportedTask:
    """A task directory with what its Harbor metadata says (Terminal-Bench tasks: nothing)."""
    found = ExportedTask(task.name, task.path, task.require_format())
    if found.format == "harbor":
        meta = tomllib.loads(task.task_toml.read_text(encoding="utf-8")).get("metadata", {})
        found.category = str(meta.get("category", ""))
        found.difficulty = str(meta.get("difficulty", ""))
    return found
