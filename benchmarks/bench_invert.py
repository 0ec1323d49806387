"""Benchmark of the operator search on one real project (prints numbers; asserts nothing).

    .venv/bin/python benchmarks/bench_invert.py [NAME==VERSION] [-n 30] [--seed 0] [--json]

Reports yield, seconds per verified task, the ratio of that time to the selected tests'
own gold runtime (three runs are the floor: broken, repeat, repaired), extra image bytes
per task beyond the gold image, discard reasons and per-stage seconds.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from report import print_numbers, stop_on_sigterm  # noqa: E402  (benchmarks/report.py)

from cligym.gold import make_gold
from cligym.invert.search import invert
from cligym.models.io import save
from cligym.runtime import Runtime


def main() -> None:
    stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", nargs="?", default="markupsafe==3.0.2")
    parser.add_argument("-n", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep the run directory here")
    args = parser.parse_args()

    runtime = Runtime()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        gold = make_gold(args.project, root / "gold", runtime=runtime)
        save(gold, root / "gold" / "gold.json")
        started = time.monotonic()
        summary = invert(root / "gold", root / "run", attempts=args.n, seed=args.seed, runtime=runtime)
        wall = time.monotonic() - started
    numbers = {
        "project": args.project,
        "attempts": summary.attempts,
        "verified": summary.verified,
        "yield": summary.yield_,
        "wall_seconds": round(wall, 1),
        "wall_seconds_per_verified": round(wall / summary.verified, 2) if summary.verified else None,
        "phase_seconds_per_verified": summary.seconds_per_verified,
        "selected_tests_gold_seconds": summary.selected_tests_seconds,
        "suite_wall_seconds_gold": round(sum(gold.test_seconds) / len(gold.test_seconds), 3),
        "ratio_to_selected_tests": (
            round(summary.seconds_per_verified / summary.selected_tests_seconds, 1)
            if summary.seconds_per_verified and summary.selected_tests_seconds else None
        ),
        "ratio_to_suite_wall": (
            round(summary.seconds_per_verified / (sum(gold.test_seconds) / len(gold.test_seconds)), 1)
            if summary.seconds_per_verified else None
        ),
        "mean_extra_bytes": summary.mean_extra_bytes,
        "mean_fail_fraction": summary.mean_fail_fraction,
        "discard_reasons": summary.discard_reasons,
        "per_category": summary.per_category,
        "phase_seconds": summary.phase_seconds.spent(),
        "limit_seconds": summary.limit_seconds,
        "cost_ratio": summary.cost_ratio,
    }
    print_numbers(numbers, args.json)


if __name__ == "__main__":
    main()
