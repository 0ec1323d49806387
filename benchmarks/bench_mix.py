"""How broad and how hard a built dataset is, per project and in all (prints a table).

    .venv/bin/python benchmarks/bench_mix.py DATASET_DIR [--json]

Reads what ``cligym dataset build`` made: the validated tasks (those with a Harbor task
folder) and their records. Per project: tasks, those that need two repairs or more (k),
those the task-blind sweeper (every habit) solves, hard ones, distinct failing-test sets
and the commonest set's share, families; then the dataset's families and their shares,
the sweeper's share and k >= 2's share, and the report's mix figures (near-duplicates,
the projects over a quarter with one failing set and why, and those of them whose
tasks fail enough distinct sets for a spread: not met). Asserts nothing: the numbers
are the result.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from report import table  # benchmarks/report.py

from cligym.layout import DatasetDir
from cligym.models.io import load
from cligym.models.task import Task
from cligym.report.mix import family_of, mix_figures


def validated(root: Path) -> list[Task]:
    """The dataset's tasks that passed validation: a record with a Harbor task folder."""
    names = {task.name for task in DatasetDir(root).harbor.task_dirs()}
    tasks = []
    for record in sorted(root.glob("projects/*/run/tasks/*/instance.json")):
        task = load(Task, record)
        if task.instance_id in names or record.parent.name in names:
            tasks.append(task)
    return tasks


COLUMNS = [("project", "project", "{}"), ("tasks", "tasks", "{}"), ("k2", "k>=2", "{}"), ("sweeper", "sweeper", "{}"),
           ("hard", "hard", "{}"), ("sets", "F2P sets", "{}"), ("top", "top F2P", "{:.2f}"),
           ("families", "families", "{}")]


def rows(tasks: list[Task]) -> list[dict]:
    by_project: dict[str, list[Task]] = {}
    for task in tasks:
        by_project.setdefault(task.repo, []).append(task)
    out = []
    for project, mine in sorted(by_project.items()):
        sets = Counter(frozenset(t.FAIL_TO_PASS) for t in mine)
        families = Counter(family_of(t) for t in mine)
        out.append({"project": project, "tasks": len(mine),
                    "k2": sum(bool(t.difficulty and t.difficulty.k >= 2) for t in mine),
                    "sweeper": sum(bool(t.difficulty and t.difficulty.sweeper_solves) for t in mine),
                    "hard": sum(bool(t.difficulty and t.difficulty.label == "hard") for t in mine),
                    "sets": len(sets), "top": sets.most_common(1)[0][1] / len(mine),
                    "families": ", ".join(f"{f} {n}" for f, n in families.most_common())})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tasks = validated(args.dataset)
    if not tasks:
        print(f"bench_mix: {args.dataset} holds no validated task", file=sys.stderr)
        return 2
    mix = mix_figures(tasks)
    total = len(tasks)
    summary = {
        "tasks": total, "project_count": len({t.repo for t in tasks}),
        "k2_share": round(sum(bool(t.difficulty and t.difficulty.k >= 2) for t in tasks) / total, 3),
        "sweeper_share": round(sum(bool(t.difficulty and t.difficulty.sweeper_solves) for t in tasks) / total, 3),
        "family_shares": {f: round(n / total, 3) for f, n in mix.families.items()},
        "over": {p.project: p.over for p in mix.projects if p.over},
        # over a quarter though their tasks fail enough distinct sets for a spread: the rule not met
        "not_met": [p.project for p in mix.projects if p.over and not p.too_few_sets],
        "near_duplicates": mix.near_duplicates,
    }
    if args.json:
        print(json.dumps({"projects": rows(tasks), **summary}, indent=2))
        return 0
    print(table(rows(tasks), COLUMNS))
    for key, value in summary.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
