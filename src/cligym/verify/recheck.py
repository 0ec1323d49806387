"""``cligym verify``: every task of a run re-checked from scratch, the results saved in
RUN_DIR/verify.json."""

from __future__ import annotations

from pathlib import Path

from cligym.errors import BadInput
from cligym.harness.probe import load_probe, run_probe
from cligym.layout import GoldDir, RunDir
from cligym.models.io import load, save
from cligym.models.task import Task
from cligym.models.verify import TaskCheck, VerifyReport
from cligym.runtime import Runtime
from cligym.ui import Reporter
from cligym.verify.checks import recheck_task


def recheck_run(run_dir: Path, gold_dir: Path, *, runtime: Runtime | None = None,
                reporter: Reporter | None = None) -> VerifyReport:
    """Re-check every task of ``run_dir`` against the gold environment of ``gold_dir``."""
    reporter = reporter or Reporter()
    run = RunDir(run_dir)
    paths = run.task_records()
    if not paths:
        raise BadInput(f"{run_dir} has no tasks (expected RUN_DIR/tasks/*/instance.json)")
    gold = GoldDir(gold_dir).load()
    tasks = [load(Task, p, "task instance") for p in paths]
    foreign = [t.instance_id for t in tasks if t.gold_image_id != gold.image_id]
    if foreign:
        raise BadInput(f"task {foreign[0]} of {run_dir} was not made from the gold environment in {gold_dir}")
    runtime = runtime or Runtime()
    if not runtime.image_exists(gold.image):
        raise BadInput(f"gold image {gold.image} is not in the Docker engine; run 'cligym gold' again")
    probe = load_probe(gold, GoldDir(gold_dir).probe, run.probe) or run_probe(runtime, gold)
    report = VerifyReport(run_dir=str(run_dir), gold_dir=str(gold_dir), checked=0, ok=0)
    with reporter.task("re-checking tasks", total=len(tasks)):
        for task in tasks:
            verification = recheck_task(runtime, gold, probe.files, task)
            report.tasks.append(TaskCheck(instance_id=task.instance_id, ok=verification.ok, kind=verification.kind,
                                          reason=verification.reason))
            report.checked, report.ok = len(report.tasks), sum(c.ok for c in report.tasks)
            save(report, run.verify_report)
            reporter.advance()
    return report
