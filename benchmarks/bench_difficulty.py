"""How hard the default tasks are: k, reveal depth, the sweeper, breadth (prints a table).

    .venv/bin/python benchmarks/bench_difficulty.py [SPEC ...] [-n 30] [--seed 0] [--keep DIR]
        [--single] [--json]

For each real project the gold environment is made, ``cligym invert``'s default mix runs
``-n`` attempts (``--single``: single built-in operators instead, ``--max-operators 1``,
the tasks the sweeper is written for), and every verified task's recorded measures are
summed up: yield; k (changes each necessary by leave-one-repair-out, plus blockers that
passed the blocker check); reveal depth; the share the task-blind sweeper solves; repair
breadth; the share whose failing output or environment names an injected path; the
median fail fraction; the share of composites that passed leave-one-repair-out; the
labels; seconds per verified task (the invert summary's). Every verified task passed the
in-pipeline verifier check (reward 0 with nothing done, 1 after the oracle) and is
offline-fair by its changes' declarations (the ``fair`` column counts them).
Asserts nothing: the numbers are the result.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from bench_tasks import gold_of  # benchmarks/bench_tasks.py
from report import each_project, project_arguments, stop_on_sigterm, table  # benchmarks/report.py

from cligym.invert.search import invert
from cligym.layout import GoldDir, RunDir
from cligym.models.gold import GoldEnv
from cligym.models.io import load
from cligym.models.task import Candidate, Task
from cligym.runtime import Runtime

#: Projects no test of the suite names.
PROJECTS = ["glom==25.12.0", "jinja2==3.1.6", "humanize==4.17.0", "tabulate==0.10.0", "marshmallow==4.4.0",
            "itsdangerous==2.2.0", "exceptiongroup==1.3.1", "toolz==1.2.0"]
COLUMNS = [
    ("project", "project", "{}"), ("attempts", "att", "{}"), ("verified", "tasks", "{}"), ("yield", "yield", "{:.0%}"),
    ("k_ge_2", "k≥2", "{:.0%}"), ("k", "k dist", "{}"), ("depth", "depth dist", "{}"),
    ("sweeper", "sweeper", "{:.0%}"), ("breadth", "med breadth", "{:.1f}"), ("named", "named", "{:.0%}"),
    ("ff", "med ff", "{:.2f}"), ("loro", "LORO", "{:.0%}"), ("fair", "fair", "{:.0%}"),
    ("labels", "labels e/m/h", "{}"), ("scenario_share", "scen", "{:.0%}"), ("seconds_per_task", "s/task", "{:.1f}"),
]


def dist(values: list[int]) -> str:
    counts = Counter(values)
    return " ".join(f"{k}:{counts[k]}" for k in sorted(counts))


def measure(tasks: list[Task]) -> dict:
    measured = [t for t in tasks if t.difficulty]
    d = [t.difficulty for t in measured]
    composite = [t for t in tasks if len(t.applied) > 1]
    labels = Counter(x.label for x in d)
    share = (lambda n: n / len(d)) if d else (lambda n: 0.0)
    return {
        "verified": len(tasks), "measured": len(d),
        "k_ge_2": share(sum(x.k >= 2 for x in d)), "k": dist([x.k for x in d]),
        "depth": dist([x.reveal_depth for x in d]), "sweeper": share(sum(x.sweeper_solves for x in d)),
        "breadth": statistics.median([x.breadth for x in d]) if d else 0.0,
        "named": share(sum(x.culprit_named for x in d)),
        "ff": statistics.median([t.fail_fraction for t in tasks]) if tasks else 0.0,
        "loro": (sum(all(a.necessary or a.blocks for a in t.applied) for t in composite) / len(composite)
                 if composite else 1.0),
        "fair": sum(bool(t.offline_fair) for t in tasks) / len(tasks) if tasks else 0.0,
        "labels": f"{labels['easy']}/{labels['medium']}/{labels['hard']}",
        "scenario_share": sum(bool(t.scenario) for t in tasks) / len(tasks) if tasks else 0.0,
        "scenarios": dict(Counter(t.scenario or "+".join(t.operators) for t in tasks).most_common()),
    }


def bench(spec: str, root: Path, attempts: int, seed: int, single: bool, runtime: Runtime) -> dict:
    name = spec.split("==")[0]
    gold_dir, run_dir = root / name / "gold", root / name / ("single" if single else "run")
    gold_of(spec, gold_dir, runtime)
    started = time.monotonic()
    options = dict(operators=None, max_operators=1, scenarios=None) if single else {}
    if single:
        from cligym.invert.operators import get

        options["operators"] = [op.name for op in get()]
    summary = invert(gold_dir, run_dir, attempts=attempts, seed=seed, runtime=runtime, **options)
    run = RunDir(run_dir)
    candidates = [load(Candidate, p) for p in sorted(run.candidates.glob("*.json"))]
    tasks = [load(Task, p) for p in run.task_records()]
    numbers = {"project": spec, "tests": len(load(GoldEnv, GoldDir(gold_dir).gold).tests), "attempts": len(candidates),
               "yield": len(tasks) / len(candidates) if candidates else 0.0,
               "discards": dict(Counter(c.discard_kind for c in candidates if c.discard_kind))}
    numbers.update(measure(tasks))
    numbers["seconds_per_task"] = summary.seconds_per_verified or 0.0
    numbers["wall_seconds"] = round(time.monotonic() - started, 1)
    numbers["_tasks"] = tasks
    return numbers


def total(rows: list[dict]) -> dict:
    tasks = [t for r in rows for t in r.get("_tasks", [])]
    attempts = sum(r.get("attempts", 0) for r in rows)
    out = {"project": "all", "attempts": attempts, "yield": len(tasks) / attempts if attempts else 0.0}
    out.update(measure(tasks))
    timed = [r for r in rows if r.get("verified")]
    out["seconds_per_task"] = (sum(r["seconds_per_task"] * r["verified"] for r in timed) / len(tasks)) if tasks else 0.0
    return out


def main() -> None:
    stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    project_arguments(parser, PROJECTS)
    parser.add_argument("--single", action="store_true", help="single built-in operators, not the default mix")
    args = parser.parse_args()
    runtime = Runtime()
    rows = each_project(args.projects, args.keep,
                        lambda spec, root: bench(spec, root, args.n, args.seed, args.single, runtime),
                        lambda rows: print(table(rows[-1:], COLUMNS), file=sys.stderr, flush=True))
    rows.append(total(rows))
    plain = [{k: v for k, v in r.items() if k != "_tasks"} for r in rows]
    if args.json:
        json.dump(plain, sys.stdout, indent=2)
        print()
    else:
        print(table(plain, COLUMNS))
        for row in plain[:-1]:
            print(f"# {row['project']}: {row.get('scenarios') or row.get('error')} discards {row.get('discards')}")


if __name__ == "__main__":
    main()
