"""How much of a fresh container's test run is compiling: gold images hold no bytecode of
the project's own files (its tests and the modules they import from the working
directory), so every run in a fresh container compiles them again, pytest rewriting its
test modules besides (prints a table; asserts nothing).

    .venv/bin/python benchmarks/bench_bytecode.py DATASET_DIR [--files 4] [--tests 200] [--json]

For each gold of a dataset build (DATASET_DIR/projects/*/gold), a seeded sample of its
tests (the tests of ``--files`` of its test files, at most ``--tests``) runs three times
in one container of the gold image, with gold's test command: cold (as every check's fresh
container runs it), warm (everything the first run compiled kept), and cold again after
``python -m compileall`` of the working directory alone (what a gold image that ran it
at build time would hold). The figures are the run's CPU seconds (user + system, bash's
``times``), so the engine's costs are left out.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
from pathlib import Path

from cligym.layout import GoldDir
from cligym.runtime import Runtime

#: One run of the sample, its CPU seconds printed on a line of their own.
_RUN = '{{ time {command} -q -p no:cacheprovider {tests} > /dev/null 2>&1; }} 2>&1'
#: The three runs: cold, warm, cold again after compileall of the working directory.
_SCRIPT = ('touch /tmp/bench-start; sleep 1; cd {workdir}; TIMEFORMAT="%U %S"; {run}; {run}; '
           'find / -xdev -name "*.pyc" -newer /tmp/bench-start -delete 2>/dev/null; '
           'python -m compileall -q {workdir} > /dev/null 2>&1; {run}')


def sample(tests: list[str], files: int, most: int) -> list[str]:
    names = sorted({t.split("::")[0] for t in tests})
    chosen = set(random.Random(0).sample(names, min(files, len(names))))
    return [t for t in tests if t.split("::")[0] in chosen][:most]


def measure(runtime: Runtime, gold_dir: Path, files: int, most: int) -> dict | None:
    gold = GoldDir(gold_dir).load()
    tests = sample(gold.tests, files, most)
    run = _RUN.format(command=gold.test_command, tests=" ".join(shlex.quote(t) for t in tests))
    with runtime.session(gold.image) as session:
        result = session.exec(["bash", "-c", _SCRIPT.format(workdir=shlex.quote(gold.workdir), run=run)],
                              timeout=900)
    lines = [line.split() for line in result.output.strip().splitlines()[-3:]]
    if len(lines) != 3 or any(len(parts) != 2 for parts in lines):
        return None
    cold, warm, compiled = (round(float(user) + float(system), 2) for user, system in lines)
    return {"project": gold_dir.parent.name, "tests": len(tests), "cold": cold, "warm": warm, "compileall": compiled}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runtime = Runtime()
    rows = [row for gold_dir in sorted(args.dataset.glob("projects/*/gold")) if (gold_dir / "gold.json").is_file()
            if (row := measure(runtime, gold_dir, args.files, args.tests)) is not None]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'project':28s} {'tests':>5s} {'cold':>6s} {'warm':>6s} {'compileall':>10s}  (CPU-s of one run)")
    for row in rows:
        print(f"{row['project']:28s} {row['tests']:5d} {row['cold']:6.2f} {row['warm']:6.2f} {row['compileall']:10.2f}")
    if rows:
        cold, warm, compiled = (sum(r[k] for r in rows) for k in ("cold", "warm", "compileall"))
        print(f"{len(rows)} golds: cold {cold:.1f}, warm {warm:.1f}, compileall alone {compiled:.1f} CPU-s: "
              f"compiling is "
              f"{100 * (cold - warm) / cold:.0f}% of a fresh run, compileall of the working directory saves "
              f"{100 * (cold - compiled) / cold:.0f}%")


if __name__ == "__main__":
    main()
