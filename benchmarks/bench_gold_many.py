"""Gold for many real projects with no profile: success rate, tests kept, seconds, causes.

    .venv/bin/python benchmarks/bench_gold_many.py [SPEC ...] [--list FILE] [--keep DIR] [--json]

Every project of the list (default: benchmarks/data/gold_projects.txt, one NAME==VERSION
a line) is made into a gold environment from its sdist with the shipped profiles turned
off: only what the project itself declares, and what the automatic repair round infers.
A project counts as built when gold succeeds with at least 20 passing tests (every project
of the list has more tests than that). Each failure gets its one-line cause. With ``--keep DIR`` every
project's record lands in DIR/<name>.json and a second call skips the finished ones (an
interrupted run resumes). Asserts nothing: the numbers are the result.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from report import stop_on_sigterm  # benchmarks/report.py

from cligym.errors import CligymError
from cligym.gold import make_gold
from cligym.runtime import Runtime
from cligym.ui import Reporter

LIST = Path(__file__).parent / "data" / "gold_projects.txt"
ENOUGH = 20


def projects(path: Path) -> list[str]:
    return [ln.split("#")[0].strip() for ln in path.read_text().splitlines() if ln.split("#")[0].strip()]


def one(spec: str, root: Path, runtime: Runtime) -> dict:
    """Gold for ``spec`` in ``root``, as a row (the images it made are removed afterwards;
    images that were there before stay)."""
    started = time.monotonic()
    before = runtime.labelled_images()
    row: dict = {"project": spec}
    try:
        gold = make_gold(spec, root / "gold", shipped_profile=False, runtime=runtime, reporter=Reporter())
    except CligymError as exc:
        row.update(cause=str(exc).splitlines()[0][:300])
    else:
        whole = len(gold.tests) + len(gold.failing) + len(gold.flaky)
        row.update(tests=len(gold.tests), failing=len(gold.failing), skipped=len(gold.skipped),
                   requirements_from=gold.requirements_from, inferred=gold.inferred)
        if len(gold.tests) < ENOUGH:
            row["cause"] = f"only {len(gold.tests)} passing tests ({whole} collected and not skipped)"
        runtime.remove_images(runtime.labelled_images(mine=True) - before)  # what this project made
    row["built"] = row.get("tests", 0) >= ENOUGH
    row["seconds"] = round(time.monotonic() - started, 1)
    return row


def table(rows: list[dict]) -> str:
    built = [r for r in rows if r.get("built")]
    lines = [f"{'project':32} {'built':5} {'tests':>6} {'secs':>6}  cause / inferred", "-" * 100]
    for r in rows:
        note = r.get("cause") or ", ".join(r.get("inferred") or {})
        lines.append(f"{r['project']:32} {'yes' if r.get('built') else 'NO':5} {r.get('tests', 0):>6} "
                     f"{r['seconds']:>6.0f}  {note[:120]}")
    seconds = [r["seconds"] for r in rows]
    lines.append("-" * 100)
    lines.append(f"{len(built)}/{len(rows)} built ({len(built) / max(1, len(rows)):.0%}); "
                 f"median tests kept {statistics.median([r['tests'] for r in built]) if built else 0}; "
                 f"median seconds {statistics.median(seconds) if seconds else 0:.0f}; "
                 f"{sum(1 for r in built if r.get('inferred'))} needed the repair round")
    return "\n".join(lines)


def main() -> None:
    stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("projects", nargs="*")
    parser.add_argument("--list", type=Path, default=LIST, help="a file of NAME==VERSION lines")
    parser.add_argument("--keep", type=Path, help="keep each project's row here (a rerun skips finished ones)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runtime = Runtime()
    rows = []
    for spec in args.projects or projects(args.list):
        done = args.keep / f"{spec.split('==')[0]}.json" if args.keep else None
        if done is not None and done.is_file():
            row = json.loads(done.read_text())
            row["built"] = row.get("tests", 0) >= ENOUGH
            rows.append(row)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            row = one(spec, Path(tmp), runtime)
        rows.append(row)
        print(f"{spec}: {'built' if row['built'] else 'failed'} in {row['seconds']:.0f} s", file=sys.stderr)
        if done is not None:
            done.parent.mkdir(parents=True, exist_ok=True)
            done.write_text(json.dumps(row, indent=2))
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        print(table(rows))


if __name__ == "__main__":
    main()
