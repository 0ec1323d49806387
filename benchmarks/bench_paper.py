"""The figures of a paper-sized dataset build, read from its directory (asserts nothing).

    cligym dataset build benchmarks/data/paper_projects.toml -o OUT --workers 2   # resumable
    .venv/bin/python benchmarks/bench_paper.py OUT [--json]

Prints what the CLI-Gym paper's dataset would cost at the measured rate: validated and hard
tasks per hour of the build's wall time, the yield, seconds per verified task by phase (every
attempt's, summed over the verified ones), bytes per task, the seconds each kind of unit
took, each project's gold time and suite sample, and the hours 1,655 tasks would take.
It reads the summary.json a build writes when it ends (also when ``--max-hours`` stops it)
and the ledger, read-only: a build may be running.
"""

from __future__ import annotations

import argparse
import json
from contextlib import closing
from pathlib import Path

from cligym.dataset.ledger import Ledger
from cligym.layout import DatasetDir, GoldDir
from cligym.models.dataset import DatasetSummary
from cligym.models.io import load

PAPER_TASKS = 1655


def figures(out: Path) -> dict:
    dataset = DatasetDir(out)
    if not dataset.summary.is_file():
        raise SystemExit(f"{out} has no summary.json yet: a build writes it when it ends (--max-hours stops one)")
    summary = load(DatasetSummary, dataset.summary)
    with closing(Ledger(dataset.ledger, readonly=True)) as ledger:
        golds = {row["project"]: row["seconds"] for row in ledger.rows("gold") if row["state"] == "done"}
    projects = []
    for project in summary.projects:
        gold_dir = GoldDir(dataset.gold(project.key))
        gold = gold_dir.load() if gold_dir.gold.is_file() else None
        sample = gold.suite if gold else None
        projects.append({
            "project": project.key, "state": project.state, "tests": project.gold_tests,
            "gold_seconds": golds.get(project.key), "attempts": project.attempts, "verified": project.verified,
            "validated": project.validated, "yield": project.yield_,
            "suite": None if sample is None else f"{len(sample.kept_files)}/{sample.files} files, "
                                                 f"≈{sample.estimated_seconds:.0f} s whole" if sample.estimated_seconds
            else f"{len(sample.kept_files)}/{sample.files} files",
        })
    per_task = summary.phase_seconds.per(summary.verified).rounded(2).spent() if summary.verified else {}
    return {
        "projects": len(summary.projects), "attempts": summary.attempts, "verified": summary.verified,
        "validated": summary.validated, "held": summary.held, "hard": summary.hard, "yield": summary.yield_,
        "wall_hours": round(summary.wall_seconds / 3600, 2), "tasks_per_hour": summary.tasks_per_hour,
        "hard_per_hour": summary.hard_per_hour,
        "hours_for_paper": round(PAPER_TASKS / summary.tasks_per_hour, 1) if summary.tasks_per_hour else None,
        "seconds_per_verified": summary.seconds_per_verified, "seconds_per_verified_by_phase": per_task,
        "unit_seconds": summary.unit_seconds_by_kind.model_dump(by_alias=True),
        "bytes_per_task": summary.bytes_per_task, "bytes_per_task_beyond_gold": summary.bytes_per_task_beyond_gold,
        "per_project": projects,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    found = figures(args.dataset)
    if args.json:
        print(json.dumps(found, indent=2))
        return
    print(f"{found['projects']} projects, {found['attempts']} attempts, {found['verified']} verified, "
          f"{found['validated']} validated ({found['held']} held), {found['hard']} hard, yield {found['yield']:.0%}")
    print(f"{found['wall_hours']} h of wall time: {found['tasks_per_hour']} tasks/h, {found['hard_per_hour']} hard/h; "
          f"{PAPER_TASKS} tasks in {found['hours_for_paper']} h")
    print(f"seconds per verified task {found['seconds_per_verified']}: "
          + ", ".join(f"{k} {v}" for k, v in found["seconds_per_verified_by_phase"].items()))
    print("unit seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in found["unit_seconds"].items() if v))
    if found["bytes_per_task"]:
        print(f"bytes per task {found['bytes_per_task']:.0f} ({found['bytes_per_task_beyond_gold']:.0f} beyond gold)")
    print(f"{'project':30} {'state':10} {'tests':>6} {'gold s':>7} {'att':>4} {'ver':>4} {'val':>4} "
          f"{'yield':>6}  suite")
    for p in found["per_project"]:
        gold = f"{p['gold_seconds']:.0f}" if p["gold_seconds"] is not None else "-"
        print(f"{p['project']:30} {p['state']:10} {p['tests']:>6} {gold:>7} {p['attempts']:>4} {p['verified']:>4} "
              f"{p['validated']:>4} {p['yield']:>6.0%}  {p['suite'] or ''}")


if __name__ == "__main__":
    main()
