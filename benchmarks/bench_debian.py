"""How a dataset of Debian source packages came out, per package and per language (prints tables).

    .venv/bin/python benchmarks/bench_debian.py DATASET_DIR... [--harbor JOB_RESULT.json ...] [--json]

Reads what ``cligym dataset build`` made of ``deb:`` projects: per package its language (the
archive's ``Testsuite`` team, or for a package with its own tests the language its build
dependencies name, as ``cligym debian candidates`` says), gold tests, the gold image's own
bytes over the shared base, attempts, verified and validated tasks, yield, tasks with
k >= 2, those the Debian sweeper solves, hard ones, distinct failing sets, how its
attempts that made no task ended, and whether its run stopped once its last attempts found
nothing new to break; then the same per language and in all. ``--harbor``: result.json
files of ``harbor run`` jobs over the dataset's Harbor tasks (oracle, nop), summed by
reward. Asserts nothing: the numbers are the result.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from bench_mix import validated  # benchmarks/bench_mix.py
from report import table  # benchmarks/report.py

from cligym.models.gold import GoldEnv
from cligym.models.io import load
from cligym.models.run import Summary
from cligym.models.task import Candidate, Task

COLUMNS = [("package", "package", "{}"), ("language", "language", "{}"), ("tests", "tests", "{}"),
           ("own_mb", "own MB", "{:.0f}"), ("attempts", "attempts", "{}"), ("verified", "verified", "{}"),
           ("tasks", "validated", "{}"), ("yield", "yield", "{:.0%}"), ("k2", "k>=2", "{}"),
           ("sweeper", "sweeper", "{}"), ("hard", "hard", "{}"), ("sets", "F2P sets", "{}"),
           ("ended", "no task: how it ended", "{}")]
TOTALS = [("language", "language", "{}"), ("packages", "packages", "{}"), ("attempts", "attempts", "{}"),
          ("tasks", "validated", "{}"), ("yield", "yield", "{:.0%}"), ("k2", "k>=2", "{:.0%}"),
          ("sweeper", "sweeper", "{:.0%}"), ("hard", "hard", "{:.0%}")]


def languages() -> dict[str, str]:
    """Source package -> language, as ``cligym debian candidates`` lists them."""
    listed = subprocess.run([sys.executable, "-m", "cligym", "debian", "candidates", "--json"],
                            capture_output=True, text=True, check=True)
    rows = json.loads(listed.stdout)
    rows = rows if isinstance(rows, list) else rows.get("candidates", [])
    return {r["source"]: r["language"] for r in rows}


def own_bytes(image: str) -> int:
    """The image's bytes beyond the layers its base shares (``docker system df -v``)."""
    df = subprocess.run(["docker", "system", "df", "-v", "--format", "{{json .Images}}"], capture_output=True,
                        text=True, check=True)
    for row in json.loads(df.stdout):
        if f"{row['Repository']}:{row['Tag']}" == image:
            return _bytes(row["UniqueSize"])
    return 0


def _bytes(text: str) -> int:
    units = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * units[unit])
    return 0


def package_rows(root: Path, tasks: list[Task], language_of: dict[str, str]) -> list[dict]:
    rows = []
    for project in sorted((root / "projects").iterdir()):
        gold_record = project / "gold" / "gold.json"
        if not gold_record.is_file():
            continue
        gold = load(GoldEnv, gold_record)
        if gold.source.kind != "debian" or not (project / "run" / "summary.json").is_file():
            continue  # not Debian's, or its run did not finish (a stopped build)
        candidates = [load(Candidate, p) for p in sorted((project / "run" / "candidates").glob("*.json"))]
        mine = [t for t in tasks if t.repo == gold.source.spec]
        attempts = len(candidates)
        rows.append({
            "package": gold.source.name, "language": language_of.get(gold.source.name, "?"),
            "tests": len(gold.tests), "own_mb": own_bytes(gold.image) / 1e6, "attempts": attempts,
            "verified": sum(c.status == "verified" for c in candidates), "tasks": len(mine),
            "yield": len(mine) / attempts if attempts else 0.0,
            "k2": sum(bool(t.difficulty and t.difficulty.k >= 2) for t in mine),
            "sweeper": sum(bool(t.difficulty and t.difficulty.sweeper_solves) for t in mine),
            "hard": sum(bool(t.difficulty and t.difficulty.label == "hard") for t in mine),
            "sets": len(Counter(frozenset(t.FAIL_TO_PASS) for t in mine)),
            "ended": ", ".join(f"{k} {n}" for k, n in Counter(c.discard_kind for c in candidates
                                                                if c.status != "verified").most_common())
            + ("; stopped: nothing new" if _exhausted(project) else ""),
        })
    return rows


def _exhausted(project: Path) -> bool:
    summary = project / "run" / "summary.json"
    return summary.is_file() and load(Summary, summary).exhausted


def totals(rows: list[dict]) -> list[dict]:
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["language"], []).append(row)
    groups["all"] = rows
    out = []
    for language, mine in groups.items():
        attempts, tasks = sum(r["attempts"] for r in mine), sum(r["tasks"] for r in mine)
        out.append({"language": language, "packages": len(mine), "attempts": attempts, "tasks": tasks,
                    "yield": tasks / attempts if attempts else 0.0,
                    **{k: sum(r[k] for r in mine) / tasks if tasks else 0.0 for k in ("k2", "sweeper", "hard")}})
    return out


def harbor(results: list[Path]) -> dict[str, dict[str, int]]:
    """Per ``harbor run`` job: its agent and how many trials got each reward."""
    out = {}
    for path in results:
        stats = json.loads(path.read_text())["stats"]
        (evals,) = stats["evals"].values()
        out[str(path)] = {"errored": stats["n_errored_trials"],
                          **{f"reward {k}": len(v) for k, v in evals["reward_stats"]["reward"].items()}}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, nargs="+", help="dataset directories (built alike), read as one")
    parser.add_argument("--harbor", type=Path, nargs="*", default=[])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    language_of = languages()
    rows = [row for dataset in args.dataset for row in package_rows(dataset, validated(dataset), language_of)]
    if not rows:
        print(f"bench_debian: {' '.join(map(str, args.dataset))} holds no Debian project", file=sys.stderr)
        return 2
    numbers = {"packages": rows, "languages": totals(rows), "harbor": harbor(args.harbor)}
    if args.json:
        print(json.dumps(numbers, indent=2))
        return 0
    print(table(rows, COLUMNS))
    print()
    print(table(numbers["languages"], TOTALS))
    for job, counts in numbers["harbor"].items():
        print(f"harbor run {job}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
