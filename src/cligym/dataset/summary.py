"""The end of a dataset build: the validated tasks joined into one dataset (Harbor's
dataset.toml, tasks.jsonl with its Parquet twin and dataset card), and the figures of the
whole build (summary.json).

A task whose validation failed does not join: its directory leaves harbor/ (its records
stay in the project's run directory and the ledger says why).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections import defaultdict
from contextlib import closing
from pathlib import Path

from cligym.dataset.ledger import Ledger
from cligym.dataset.mix import balanced, mix_entries
from cligym.dataset.manifest import write_manifest
from cligym.dataset.records import probe_figures
from cligym.export.jsonl import read_rows, write_rows
from cligym.layout import DatasetDir, ExportDir, GoldDir, RunDir
from cligym.models.dataset import DatasetPlan, DatasetSummary, ProjectFigures, UnitSeconds
from cligym.models.export import TaskRow
from cligym.models.io import load, save
from cligym.models.task import Candidate, Task
from cligym.models.timing import PhaseSeconds


def dataset_bytes(dataset: DatasetDir) -> int:
    """Bytes the dataset directory takes (files once each; the bundle included)."""
    total, seen = 0, set()
    for here, _, files in os.walk(dataset.path):
        for name in files:
            try:
                stat = os.lstat(os.path.join(here, name))
            except OSError:
                continue
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_size
    return total


def link_identical(root: Path, min_size: int = 4096) -> int:
    """Hard-link identical files under ``root`` (the verifier's static busybox, shared test
    data) to one copy; returns the bytes saved. Task files are never edited in place."""
    first: dict[tuple[int, int, str], Path] = {}
    saved = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        stat = path.stat()
        if stat.st_size < min_size:
            continue
        key = (stat.st_size, stat.st_mode, hashlib.sha256(path.read_bytes()).hexdigest())
        keep = first.setdefault(key, path)
        if keep != path and not os.path.samefile(keep, path):
            temporary = path.with_name(f".{path.name}.link")
            os.link(keep, temporary)
            os.replace(temporary, path)
            saved += stat.st_size
    return saved


def _join(dataset: DatasetDir, ledger: Ledger, plan: DatasetPlan) -> tuple[list[str], dict[str, str], list[Task]]:
    """The validated tasks the dataset holds, and those its mix leaves out (id -> why);
    failed ones leave harbor/, left-out ones wait in left-out/ (a later resume may take them
    back), and the validated tasks' records. Writes tasks.jsonl (with its Parquet twin and
    dataset card) and dataset.toml."""
    validations = ledger.rows("validate")
    validated = sorted(row["key"].split("/", 1)[1] for row in validations if row["state"] == "done")
    records = _records(dataset, plan, validated)
    for row in validations:
        folder = dataset.harbor.task(row["key"].split("/", 1)[1]).path
        if row["state"] == "failed" and folder.is_dir():
            shutil.rmtree(folder)
    left = balanced(mix_entries(records))
    for task in validated:
        inside, outside = dataset.harbor.task(task).path, dataset.left_out / task
        if inside.is_dir() and outside.exists():  # exported again (a retry): harbor/'s is newer
            shutil.rmtree(outside)
        source, target = (inside, outside) if task in left else (outside, inside)
        if source.is_dir():
            target.parent.mkdir(parents=True, exist_ok=True)
            source.rename(target)
    good = [task for task in validated if task not in left]
    rows: dict[str, TaskRow] = {}
    for project in {row["project"] for row in validations}:
        staging = ExportDir(dataset.staging(project, "jsonl"))
        if staging.jsonl.is_file():
            rows |= {r.instance_id: r for r in read_rows(staging)}
    write_rows(dataset, [rows[k] for k in good if k in rows])
    if good:
        link_identical(dataset.harbor.path)
        write_manifest(dataset.harbor, good, dataset.manifest)
    return good, left, records


def _records(dataset: DatasetDir, plan: DatasetPlan, tasks: list[str]) -> list[Task]:
    """The task records of ``tasks``, in their order."""
    wanted = set(tasks)
    found = {}
    for project in plan.projects:
        for path in RunDir(dataset.run(project.key)).task_records():
            task = load(Task, path)
            if task.instance_id in wanted:
                found[task.instance_id] = task
    return [found[t] for t in tasks if t in found]


def project_figures(dataset: DatasetDir, ledger: Ledger, key: str) -> ProjectFigures:
    rows = ledger.rows(project=key)
    units = {row["kind"]: row for row in rows if row["kind"] in ("gold", "invert", "export")}
    failed = next((row for row in units.values() if row["state"] == "failed"), None)
    validations, attempts = [r for r in rows if r["kind"] == "validate"], [r for r in rows if r["kind"] == "attempt"]
    state = "failed" if failed else _state(units, validations)
    gold = GoldDir(dataset.gold(key))
    gold_tests = len(gold.load().tests) if gold.gold.is_file() else 0
    verified = sum(r["state"] == "done" for r in attempts)
    return ProjectFigures(
        key=key, state=state, cause=f"{failed['kind']}: {failed['detail']}" if failed else "",
        gold_tests=gold_tests, attempts=len(attempts), verified=verified, exported=len(validations),
        validated=sum(v["state"] == "done" for v in validations),
        yield_=round(verified / len(attempts), 4) if attempts else 0.0,
        seconds=round(sum(r["seconds"] for r in rows if r["kind"] != "attempt"), 1))


def _unit_seconds(ledger: Ledger) -> UnitSeconds:
    """The build's unit seconds by kind (attempts are part of their invert unit's)."""
    total: dict[str, float] = defaultdict(float)
    for row in ledger.rows():
        if row["kind"] in UnitSeconds.model_fields or row["kind"] == "validate":
            total[row["kind"]] += row["seconds"]
    return UnitSeconds(**{k: round(v, 1) for k, v in total.items()})


def _state(units: dict, validations: list) -> str:
    """done, "running <kind>", or pending (waits for a worker, or the build stopped)."""
    running = [kind for kind, row in units.items() if row["state"] == "running"]
    if running or any(v["state"] == "running" for v in validations):
        return f"running {running[0] if running else 'validate'}"
    finished = units.get("export") is not None and units["export"]["state"] == "done"
    return "done" if finished and all(v["state"] in ("done", "failed") for v in validations) else "pending"


def _same_deltas(tasks: list[Task]) -> int:
    """How many ΔDs were exported for more than one project."""
    owners: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for task in tasks:
        owners[tuple(task.dockerfile)].add(task.repo)
    return sum(len(o) > 1 for o in owners.values())


def finish_dataset(dataset: DatasetDir, plan: DatasetPlan, ledger: Ledger, stopped: str) -> DatasetSummary:
    good, left, records = _join(dataset, ledger, plan)
    wall = ledger.wall_seconds()
    projects = [project_figures(dataset, ledger, p.key) for p in plan.projects]
    size = dataset_bytes(dataset)
    bundle = dataset.bundle.stat().st_size if dataset.bundle.is_file() else 0
    attempts, verified = sum(p.attempts for p in projects), sum(p.verified for p in projects)
    probed, probes_failed = probe_figures(dataset, good)
    phases = PhaseSeconds.summed([load(Candidate, path).seconds for p in plan.projects
                                  for path in RunDir(dataset.run(p.key)).candidate_records().values()])
    held = set(good)
    hard = sum(1 for t in records if t.instance_id in held and t.difficulty and t.difficulty.label == "hard")
    summary = DatasetSummary(
        seed=plan.seed, projects=projects, tasks=sum(p.exported for p in projects), validated=len(good) + len(left),
        held=len(good), left_out_for_mix=left,
        attempts=attempts, verified=verified, yield_=round(verified / attempts, 4) if attempts else 0.0,
        stopped=stopped, dataset_bytes=size, bundle_bytes=bundle,
        bytes_per_task=round(size / len(good), 1) if good else None,
        bytes_per_task_beyond_gold=round((size - bundle) / len(good), 1) if good else None,
        unit_seconds=round(sum(r["seconds"] for r in ledger.rows() if r["kind"] != "attempt"), 1),
        unit_seconds_by_kind=_unit_seconds(ledger), phase_seconds=phases.rounded(1),
        seconds_per_verified=round(phases.total() / verified, 2) if verified else None, hard=hard,
        wall_seconds=round(wall, 1), tasks_per_hour=round(len(good) / (wall / 3600), 2) if wall > 0 else None,
        hard_per_hour=round(hard / (wall / 3600), 2) if wall > 0 else None,
        same_delta_groups=_same_deltas([t for t in records if t.instance_id not in left]), probed=probed,
        probes_failed=probes_failed)
    save(summary, dataset.summary)
    return summary


def dataset_status(out: Path) -> tuple[list[ProjectFigures], list[str]]:
    """Each project's figures and the units running now, read from the ledger."""
    dataset = DatasetDir(Path(out))
    plan = load(DatasetPlan, dataset.plan, "dataset plan")
    with closing(Ledger(dataset.ledger, readonly=True)) as ledger:
        return ([project_figures(dataset, ledger, p.key) for p in plan.projects],
                [row["key"] for row in ledger.rows() if row["state"] == "running"])
