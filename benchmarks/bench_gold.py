"""Benchmark of the gold stage on one real project (prints numbers; asserts nothing).

    .venv/bin/python benchmarks/bench_gold.py [NAME==VERSION] [--repeat N] [--json]

Reports: wheelhouse seconds (cold, in an empty cache: host downloads, wheels built in a
container), gold image build seconds
cold (no layer cache) and warm (identical context, cached image reused), one full test
suite run in a container, and the container start overhead (`true`, run N times).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from report import print_numbers, stop_on_sigterm  # noqa: E402  (benchmarks/report.py)

from cligym.gold import make_gold
from cligym.harness.testrun import run_tests
from cligym.runtime import Runtime, ensure_base_image


def main() -> None:
    stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", nargs="?", default="h11==0.16.0")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    runtime = Runtime()
    ensure_base_image(runtime)
    numbers: dict[str, float | str | int] = {"project": args.project}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CLIGYM_HOME"] = str(Path(tmp) / "home")  # empty host caches: a cold wheelhouse
        t0 = time.monotonic()
        cold = make_gold(args.project, Path(tmp) / "cold", runtime=runtime, rebuild=True, runs=1)
        numbers["gold_total_cold_s"] = round(time.monotonic() - t0, 2)
        numbers["build_cold_s"] = cold.build_seconds
        t0 = time.monotonic()
        warm = make_gold(args.project, Path(tmp) / "warm", runtime=runtime, runs=1)
        numbers["gold_total_warm_s"] = round(time.monotonic() - t0, 2)
        numbers["build_warm_s"] = warm.build_seconds
        numbers["image_reused"] = str(warm.image_id == cold.image_id)
    numbers["tests_kept"] = len(cold.tests)
    suite = [run_tests(runtime, cold.image, cold.workdir, cold.test_command).seconds for _ in range(3)]
    numbers["suite_run_s_median"] = round(statistics.median(suite), 3)
    subset = run_tests(runtime, cold.image, cold.workdir, cold.test_command, cold.tests)
    numbers["suite_by_node_ids_s"] = round(subset.seconds, 3)
    starts = [runtime.run(cold.image, ["true"], timeout=60).seconds for _ in range(args.repeat)]
    numbers["container_true_s_median"] = round(statistics.median(starts), 3)
    numbers["container_true_s_min"] = round(min(starts), 3)
    with runtime.session(cold.image) as session:
        execs = [session.exec(["true"]).seconds for _ in range(args.repeat)]
    numbers["exec_true_s_median"] = round(statistics.median(execs), 3)
    numbers["image_bytes"] = cold.image_bytes
    print_numbers(numbers, args.json)


if __name__ == "__main__":
    main()
