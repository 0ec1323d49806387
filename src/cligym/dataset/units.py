"""The units of work of a dataset build, each one call of an existing stage.

``run_unit(dataset_dir, key)`` does one unit wherever it is called: in a worker process of
this machine or in a Ray worker on another node. Every unit is idempotent — what it made
before is found on disk (and in the engine) and kept — so a unit that a killed build left
half done simply runs again. Failures that concern one project (no gold, no task) come
back as an outcome with a one-line cause; only the loss of the engine raises.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

from cligym.errors import BadInput, CligymError, Fatal
from cligym.layout import DatasetDir, ExportDir, GoldDir
from cligym.models.dataset import DatasetPlan, PlannedProject, UnitOutcome
from cligym.models.gold import GoldEnv
from cligym.models.io import load
from cligym.runtime import Runtime


def plan_of(dataset: DatasetDir) -> DatasetPlan:
    return load(DatasetPlan, dataset.plan, "dataset plan")


def _gold(dataset: DatasetDir, project: PlannedProject, runtime: Runtime, deadline: float | None) -> UnitOutcome:
    from cligym.gold import make_gold

    gold_dir, registry = GoldDir(dataset.gold(project.key)), plan_of(dataset).registry
    built = gold_dir.gold.is_file() and gold_dir.probe.is_file() and present(runtime, gold_dir.load(), registry)
    record = gold_dir.load() if built else make_gold(
        project.source, gold_dir.path, image=project.image, test_command=project.test_cmd,
        profile_path=Path(project.profile) if project.profile else None, runtime=runtime)
    _publish(dataset, gold_dir, runtime, registry)
    return UnitOutcome(ok=True, detail=f"{len(record.tests)} tests{' (built before)' if built else ''}")


def present(runtime: Runtime, gold: GoldEnv, registry: str | None) -> bool:
    """Whether this node's engine has the gold image. With ``registry``, it must be the very
    image of the record: pulled by digest where the engine lacks it, or where its tag names
    another build of the same inputs (which differs in its files' times)."""
    record = next((r for r in reversed(gold.registry_images) if r.registry == registry), None) if registry else None
    if record is None:
        return runtime.image_exists(gold.image)
    runtime.pull_image(record)
    return True


def _publish(dataset: DatasetDir, gold_dir: GoldDir, runtime: Runtime, registry: str | None) -> None:
    """With a registry: the gold image pushed there (once), noted in gold.json and the
    dataset's registry.json."""
    if not registry:
        return
    from cligym.export.publish import Source, note, still_served

    gold = gold_dir.load()
    known = next((r for r in gold.registry_images if r.registry == registry and r.image_id == gold.image_id), None)
    note(Source(dataset.path, [gold.image], [gold_dir], dataset.registry),
         still_served(runtime, registry, gold.image, known))


def _needs_gold(dataset: DatasetDir, project: PlannedProject, runtime: Runtime) -> None:
    """The project's gold image in this node's engine (pulled from the plan's registry), or
    a CligymError saying why it cannot be."""
    gold = GoldDir(dataset.gold(project.key)).load()
    registry = plan_of(dataset).registry
    if not present(runtime, gold, registry):
        where = f"nor pushed to {registry}" if registry else "(build with --registry so nodes can pull it)"
        raise CligymError(f"gold image {gold.image} is not in this node's engine {where}")


def _invert(dataset: DatasetDir, project: PlannedProject, runtime: Runtime, deadline: float | None) -> UnitOutcome:
    from cligym.invert import invert

    _needs_gold(dataset, project, runtime)
    summary = invert(dataset.gold(project.key), dataset.run(project.key), attempts=project.attempts,
                     seed=project.seed, max_tasks=project.tasks, deadline=deadline, runtime=runtime,
                     beside=False)  # (the build's workers keep the engine's CPUs busy)
    if deadline is not None and time.time() >= deadline and summary.attempts < project.attempts \
            and not summary.exhausted and (project.tasks is None or summary.verified < project.tasks):
        return UnitOutcome(ok=True, unfinished=True, detail=f"{summary.verified} tasks of {summary.attempts} attempts "
                                                             "so far: stopped at the build's deadline")
    if summary.verified == 0:
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(summary.discard_reasons.items()))
        return UnitOutcome(ok=False, detail=f"no verified task in {summary.attempts} attempts ({reasons})")
    return UnitOutcome(ok=True, detail=f"{summary.verified} tasks of {summary.attempts} attempts")


def _export(dataset: DatasetDir, project: PlannedProject, runtime: Runtime, deadline: float | None) -> UnitOutcome:
    """The project's tasks as Harbor task dirs (moved into the dataset's harbor/) and JSONL
    rows (kept in the staging dir; the build joins them)."""
    from cligym.export.stage import export
    from cligym.issue import write_missing_issues

    _needs_gold(dataset, project, runtime)
    run, registry = dataset.run(project.key), plan_of(dataset).registry
    write_missing_issues(run)
    staging = dataset.staging(project.key, "harbor")
    report = export(run, "harbor", staging, force=True, runtime=runtime, registry=registry)
    export(run, "jsonl", dataset.staging(project.key, "jsonl"), force=True, runtime=runtime, registry=registry)
    harbor = dataset.harbor
    harbor.path.mkdir(parents=True, exist_ok=True)
    for name in report.tasks:
        target = harbor.task(name).path
        if target.exists():  # an earlier export of the same task: the same content
            shutil.rmtree(target)
        os.replace(ExportDir(staging).task(name).path, target)
    left = f", {len(report.left_out)} left out (not offline-fair)" if report.left_out else ""
    return UnitOutcome(ok=True, detail=f"{len(report.tasks)} tasks{left}", tasks=report.tasks)


def _validate(dataset: DatasetDir, task: str, runtime: Runtime) -> UnitOutcome:
    from cligym.dataset.manifest import task_digest
    from cligym.dataset.records import record
    from cligym.validate.stage import validate_task

    result = record(dataset, validate_task(runtime, dataset.harbor.task(task), digest=task_digest))
    if result.ok:
        detail = "oracle 1, nop 0"
    elif result.oracle.reward == 1 and result.nop.reward == 0:  # a probe an earlier `validate --probes` ran
        detail = result.failed_probes[0].line()  # on the same files failed
    else:
        detail = f"oracle {result.oracle.reward} {result.oracle.detail} / nop {result.nop.reward} {result.nop.detail}"
    return UnitOutcome(ok=result.ok, detail=detail[:300], oracle=result.oracle.reward, nop=result.nop.reward)


def _bundle(dataset: DatasetDir, runtime: Runtime) -> UnitOutcome:
    """The gold images of every project with exported tasks, in one tar (layers once)."""
    images = sorted({GoldDir(dataset.gold(p.key)).load().image for p in plan_of(dataset).projects
                     if ExportDir(dataset.staging(p.key, "jsonl")).jsonl.is_file()})
    if not images:
        return UnitOutcome(ok=True, detail="no gold image to save")
    size = runtime.save_images(images, dataset.bundle)
    return UnitOutcome(ok=True, detail=f"{len(images)} images, {size} bytes")


#: The per-project units, by kind.
PROJECT_UNITS: dict[str, Callable[[DatasetDir, PlannedProject, Runtime, float | None], UnitOutcome]] = {
    "gold": _gold, "invert": _invert, "export": _export,
}


def run_unit(dataset_dir: Path, key: str, deadline: float | None = None) -> UnitOutcome:
    """Do one unit; its outcome, with the node it ran on."""
    dataset = DatasetDir(Path(dataset_dir))
    kind, _, name = key.partition("/")
    runtime = Runtime()
    try:
        if kind in PROJECT_UNITS:
            project = next((p for p in plan_of(dataset).projects if p.key == name), None)
            if project is None:
                raise BadInput(f"the dataset plan has no project {name!r}")
            outcome = PROJECT_UNITS[kind](dataset, project, runtime, deadline)
        elif kind == "validate":
            outcome = _validate(dataset, name, runtime)
        elif kind == "bundle":
            outcome = _bundle(dataset, runtime)
        else:
            raise BadInput(f"unknown unit {key!r}")
    except Fatal:
        raise
    except CligymError as exc:
        outcome = UnitOutcome(ok=False, detail=" ".join(str(exc).split())[:500])
    finally:
        runtime.close()
    return outcome.model_copy(update={"node": outcome.node or socket.gethostname()})
