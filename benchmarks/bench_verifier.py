"""What the verifier lets through and what it costs, per operator (prints a table).

    .venv/bin/python benchmarks/bench_verifier.py [SPEC ...] [-n 40] [--seed 0] [--keep DIR] [--json]

For each real project the gold environment is made and the operator search runs ``-n``
single-operator attempts with the default operator set. Every attempt's broken state goes
through the task's own verifier before it becomes a task (``verify.checks.verifier_check``:
reward 0 with nothing done, reward 1 after the oracle's repair), so the table shows, per
operator: attempts, tasks, states the verifier scored 1 untouched (``trivial: the task's
verifier``), states whose oracle it refused (``not_solvable: the task's verifier``), other
discards; and the median seconds of that verifier check (two verifier runs: nop and
oracle). Run it with another checkout's code first on the PYTHONPATH to compare two
verifiers on the same attempts (same seed, same attempts). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from report import stop_on_sigterm  # benchmarks/report.py

from cligym.gold import make_gold
from cligym.invert.search import invert
from cligym.layout import GoldDir, RunDir
from cligym.models.gold import GoldEnv
from cligym.models.io import load
from cligym.models.task import Candidate
from cligym.runtime import Runtime

PROJECTS = ["python-dotenv==1.0.1", "markupsafe==3.0.2"]


def outcome(candidate: Candidate) -> str:
    if candidate.status == "verified":
        return "task"
    if "the task's verifier" in candidate.reason:
        return f"verifier:{candidate.discard_kind}"
    return "other"


def measure(spec: str, attempts: int, seed: int, root: Path, runtime: Runtime) -> dict:
    gold_dir = root / spec.split("==")[0] / "gold"
    if GoldDir(gold_dir).gold.is_file():
        load(GoldEnv, GoldDir(gold_dir).gold)
    else:
        make_gold(spec, gold_dir, runtime=runtime)
    run = root / spec.split("==")[0] / "run"
    invert(gold_dir, run, attempts=attempts, seed=seed, max_operators=1, runtime=runtime)
    per_op: dict[str, Counter] = defaultdict(Counter)
    seconds, reasons = [], Counter()
    for path in sorted(RunDir(run).candidates.glob("*.json")):
        candidate = load(Candidate, path)
        if not candidate.operators:
            continue
        kind = outcome(candidate)
        per_op[candidate.operators[0].name][kind] += 1
        if kind.startswith("verifier:"):
            reasons[candidate.reason[:160]] += 1
        if candidate.seconds.verifier:
            seconds.append(candidate.seconds.verifier)
    return {"project": spec, "operators": {op: dict(c) for op, c in sorted(per_op.items())},
            "verifier_seconds_median": statistics.median(seconds) if seconds else None,
            "verifier_checks": len(seconds), "refusals": dict(reasons.most_common(20))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", nargs="*", default=PROJECTS)
    parser.add_argument("-n", "--attempts", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    stop_on_sigterm()
    runtime = Runtime()
    with tempfile.TemporaryDirectory(prefix="cligym-bench-verifier-") as tmp:
        root = args.keep or Path(tmp)
        results = [measure(spec, args.attempts, args.seed, root, runtime) for spec in args.projects]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for result in results:
        print(f"\n{result['project']}: median verifier check {result['verifier_seconds_median']:.1f} s "
              f"over {result['verifier_checks']} checks (nop + oracle, each a verifier run)")
        print(f"  {'operator':32} {'tasks':>5} {'trivial':>7} {'refused':>7} {'other':>5}")
        for op, c in result["operators"].items():
            print(f"  {op:32} {c.get('task', 0):5} {c.get('verifier:trivial', 0):7} "
                  f"{c.get('verifier:not_solvable', 0):7} {c.get('other', 0):5}")
        for reason, n in result["refusals"].items():
            print(f"  {n} x {reason}")


if __name__ == "__main__":
    sys.exit(main())
