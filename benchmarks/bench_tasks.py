"""How good the tasks are: yield, spread, minimality, texts, fairness (prints a table).

    .venv/bin/python benchmarks/bench_tasks.py [SPEC ...] [-n 30] [--seed 0] [--keep DIR] [--json]

For each real project (default: seven PyPI projects), the gold environment is made, the
operator search runs ``-n`` attempts with the default operator set, and the records it
leaves are measured:

- yield: verified tasks / attempts (screen misses inside an attempt are counted apart);
- median fail fraction, and the share of tasks failing ≤ 25% of their selected tests;
- minimality: the share of composite tasks whose every operator is necessary (its ΔD left
  out lets some F2P test pass), by the evidence each task records;
- texts: tasks whose issue texts ``check_issues`` refuses (a stated symptom no F2P error
  shows, a claim ΔD contradicts, harness noise, a leak);
- fairness: the share of tasks offline-fair by their operators' declarations, and of the
  tasks a default export (``--offline-only``) keeps;
- the largest share of one run's tasks that one operator made.

With ``--keep DIR`` the gold and run directories stay in DIR and a second call resumes
the runs. Asserts nothing: the numbers are the result.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from report import each_project, project_arguments, stop_on_sigterm, table  # benchmarks/report.py

from cligym.export.stage import export
from cligym.gold import make_gold
from cligym.invert.search import invert
from cligym.issue import check_issues
from cligym.layout import GoldDir, RunDir
from cligym.models.gold import GoldEnv
from cligym.models.io import load
from cligym.models.issue import TaskIssues
from cligym.models.task import Candidate, Task
from cligym.runtime import Runtime

PROJECTS = ["markupsafe==3.0.2", "h11==0.16.0", "python-dotenv==1.2.1", "apispec==6.10.1", "environs==15.2.0",
            "humanize==4.17.0", "jinja2==3.1.6"]
COLUMNS = [
    ("project", "project", "{}"), ("tests", "suite", "{}"), ("attempts", "att", "{}"), ("verified", "tasks", "{}"),
    ("yield", "yield", "{:.0%}"), ("screen_misses", "misses", "{}"), ("median_fail_fraction", "med ff", "{:.2f}"),
    ("share_ff_le_25", "ff≤.25", "{:.0%}"), ("composite", "comp", "{}"), ("minimal", "minimal", "{:.0%}"),
    ("bad_texts", "bad txt", "{}"), ("offline_fair", "fair", "{:.0%}"), ("exported_fair", "exp fair", "{:.0%}"),
    ("max_operator_share", "max op", "{:.0%}"), ("seconds_per_task", "s/task", "{:.1f}"),
]


def gold_of(spec: str, folder: Path, runtime: Runtime) -> None:
    if GoldDir(folder).gold.is_file() and runtime.image_exists(load(GoldEnv, GoldDir(folder).gold).image):
        return
    make_gold(spec, folder, runtime=runtime)


def measure(run_dir: Path, export_dir: Path) -> dict:
    run = RunDir(run_dir)
    candidates = [load(Candidate, p) for p in sorted(run.candidates.glob("*.json"))]
    tasks = [load(Task, p) for p in run.task_records()]
    ff = [t.fail_fraction for t in tasks]
    composite = [t for t in tasks if len(t.applied) > 1]
    minimal = [t for t in composite if all(a.necessary for a in t.applied)]
    bad = [t.instance_id for t in tasks if check_issues(t, load(TaskIssues, run.issues(t.instance_id)))]
    made = Counter(name for t in tasks for name in set(t.operators))
    report = export(run_dir, "jsonl", export_dir, force=True) if tasks else None
    exported = [t for t in tasks if report and t.instance_id in report.tasks]
    return {
        "attempts": len(candidates), "verified": len(tasks),
        "yield": len(tasks) / len(candidates) if candidates else 0.0,
        "screen_misses": sum(len(c.screened) for c in candidates),
        "discards": dict(Counter(c.discard_kind for c in candidates if c.discard_kind)),
        "median_fail_fraction": statistics.median(ff) if ff else 0.0,
        "share_ff_le_25": sum(f <= 0.25 for f in ff) / len(ff) if ff else 0.0,
        "composite": len(composite), "minimal": len(minimal) / len(composite) if composite else 1.0,
        "decoys_dropped": sum(len(c.decoys) for c in candidates),
        "bad_texts": len(bad), "bad_text_ids": bad,
        "offline_fair": sum(bool(t.offline_fair) for t in tasks) / len(tasks) if tasks else 0.0,
        "exported": len(exported),
        "exported_fair": sum(bool(t.offline_fair) for t in exported) / len(exported) if exported else 1.0,
        "max_operator_share": max(made.values()) / len(tasks) if tasks else 0.0,
        "operators": dict(made.most_common()),
        "mean_failing_tests": statistics.mean(len(t.FAIL_TO_PASS) for t in tasks) if tasks else 0.0,
        "mean_passing_tests": statistics.mean(len(t.PASS_TO_PASS) for t in tasks) if tasks else 0.0,
    }


def bench(spec: str, root: Path, attempts: int, seed: int, runtime: Runtime) -> dict:
    name = spec.split("==")[0]
    gold_dir, run_dir = root / name / "gold", root / name / "run"
    gold_of(spec, gold_dir, runtime)
    started = time.monotonic()
    summary = invert(gold_dir, run_dir, attempts=attempts, seed=seed, runtime=runtime)
    wall = time.monotonic() - started
    numbers = {"project": spec, "tests": len(load(GoldEnv, GoldDir(gold_dir).gold).tests)}
    numbers.update(measure(run_dir, root / name / "export"))
    numbers["seconds_per_task"] = (summary.seconds_per_verified or 0.0)
    numbers["wall_seconds"] = round(wall, 1)
    return numbers


def main() -> None:
    stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    project_arguments(parser, PROJECTS)
    args = parser.parse_args()
    runtime = Runtime()
    rows = each_project(args.projects, args.keep, lambda spec, root: bench(spec, root, args.n, args.seed, runtime),
                        lambda rows: save_rows(args.keep, rows) if args.keep else None)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        print(table(rows, COLUMNS))


def save_rows(folder: Path, rows: list[dict]) -> None:
    (folder / "bench_tasks.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
