"""The dataset factory's throughput: ``cligym dataset build`` over real projects, with one
and with N workers (prints a table).

    .venv/bin/python benchmarks/bench_dataset.py [-p 10] [-n 30] [--tasks 30] [--workers 2]
        [--keep DIR] [--json] [--skip-single]

The first ``-p`` projects of ``benchmarks/data/dataset_projects.txt`` (real PyPI projects
whose sdists carry their tests) each get ``-n`` attempts; the same dataset is built twice,
with ``--workers 1`` and ``--workers N``, into two directories (``--keep``: kept, and a
second call resumes them). Measured, per build:

- verified tasks per hour of wall time (gold builds included: a real dataset needs them);
- CPU-seconds per verified task: the machine's user+system time (``/proc/stat``) over the
  build, containers included, divided by the validated tasks;
- bytes per task: the dataset directory over its tasks, with and without the gold images;
- yield per project; the speed-up of N workers over one; the hours the paper's 1,655 tasks
  would take at the measured rate.

Asserts nothing: the numbers are the result.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import stop_on_sigterm  # benchmarks/report.py

from cligym.models.dataset import DatasetSummary

DATA = Path(__file__).resolve().parent / "data" / "dataset_projects.txt"
PAPER_TASKS = 1655


def machine_cpu_seconds() -> float:
    """User + system seconds all CPUs have spent since boot."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system = (int(v) for v in fields[:3])
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")


def projects_toml(specs: list[str], attempts: int, tasks: int, folder: Path) -> Path:
    path = folder / "projects.toml"
    body = f"attempts = {attempts}\ntasks = {tasks}\n" + "".join(f'\n[[project]]\nsource = "{s}"\n' for s in specs)
    path.write_text(body, encoding="utf-8")
    return path


def build(projects: Path, out: Path, workers: int, seed: int) -> dict:
    cpu, wall = machine_cpu_seconds(), time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cligym", "dataset", "build", str(projects), "-o", str(out),
                           "--workers", str(workers), "--seed", str(seed), "--json", "-q", "--retry-failed"],
                          capture_output=True, text=True)
    if done.returncode != 0 and not done.stdout.strip():
        raise SystemExit(f"the build failed: {done.stderr.strip().splitlines()[-1:]}")
    summary = DatasetSummary.model_validate_json(done.stdout)
    cpu, wall = machine_cpu_seconds() - cpu, time.monotonic() - wall
    tasks = summary.validated
    return {
        "workers": workers, "projects": len(summary.projects), "attempts": summary.attempts, "tasks": tasks,
        "wall_seconds": round(summary.wall_seconds, 1), "this_call_seconds": round(wall, 1),
        "tasks_per_hour": summary.tasks_per_hour, "cpu_seconds_per_task": round(cpu / tasks, 1) if tasks else None,
        "bytes_per_task": summary.bytes_per_task, "bytes_per_task_beyond_gold": summary.bytes_per_task_beyond_gold,
        "hours_for_paper": round(PAPER_TASKS / summary.tasks_per_hour, 1) if summary.tasks_per_hour else None,
        "yield": {p.key: p.yield_ for p in summary.projects},
        "failed": {p.key: p.cause for p in summary.projects if p.state == "failed"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--projects", type=int, default=10)
    parser.add_argument("-n", "--attempts", type=int, default=30)
    parser.add_argument("--tasks", type=int, default=30, help="task budget per project")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--skip-single", action="store_true", help="only the --workers N build")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    stop_on_sigterm()
    specs = [s.strip() for s in DATA.read_text().splitlines() if s.strip() and not s.startswith("#")][:args.projects]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-dataset-"))
    folder.mkdir(parents=True, exist_ok=True)
    projects = projects_toml(specs, args.attempts, args.tasks, folder)
    results = [build(projects, folder / f"workers-{args.workers}", args.workers, args.seed)]
    if not args.skip_single and args.workers != 1:
        results.append(build(projects, folder / "workers-1", 1, args.seed))
    if len(results) == 2 and results[0]["tasks_per_hour"] and results[1]["tasks_per_hour"]:
        results[0]["speed_up"] = round(results[0]["tasks_per_hour"] / results[1]["tasks_per_hour"], 2)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        print(f"--workers {r['workers']}: {r['projects']} projects, {r['attempts']} attempts, {r['tasks']} tasks "
              f"in {r['wall_seconds'] / 3600:.2f} h: {r['tasks_per_hour']} tasks/h, "
              f"{r['cpu_seconds_per_task']} CPU-s/task, {r['bytes_per_task']:.0f} B/task "
              f"({r['bytes_per_task_beyond_gold']:.0f} beyond the gold images), "
              f"{r['hours_for_paper']} h for {PAPER_TASKS} tasks"
              + (f", speed-up {r['speed_up']}×" if "speed_up" in r else ""))
        for key, share in r["yield"].items():
            print(f"    {key:32} yield {share:.0%}  {r['failed'].get(key, '')}")


if __name__ == "__main__":
    main()
