"""The machine CPU one step of a check costs in engine calls, the way cligym makes it now
against the calls it made before (prints a table).

    .venv/bin/python benchmarks/bench_engine_calls.py [IMAGE] [-n 25] [--rounds 4] [--json]

Every engine call that starts a process (an exec: runc; a copy in or out: the engine's
own helper in the container's root) costs about as much CPU as the others, some 70 ms on
two cores, whatever it carries. Two steps repeat in every check of a broken state:

- running a repair script: before, a copy-in of the script, an exec running it and an
  exec removing it; now one exec that writes, runs and removes it (``run_script``);
- a test run in a used container: before, an exec removing the last report, the exec of
  the tests and a copy-out of the report; now one exec (``exec_then_read``).

Both ways run in turn in one container of IMAGE (default: the newest gold image), ``-n``
times a round; the figure is the machine's CPU seconds (``/proc/stat``: every process,
the engine's included) per step. The test step runs a stand-in that writes a small
report, so the figure is the calls' cost, not pytest's. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

from cligym.harness.images import SOLUTION_PATH, run_script
from cligym.harness.testrun import REPORT_PATH
from cligym.runtime import Runtime, Session

SCRIPT = "set -e\necho repairing\ntrue\n"
WRITE_REPORT = f"echo '<testsuites/>' > {REPORT_PATH}; echo ran"


def machine_cpu() -> float:
    """CPU seconds every process of the machine has used (less idle and I/O wait)."""
    fields = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def script_before(session: Session) -> None:
    session.put_files({SOLUTION_PATH: (SCRIPT, 0o755)})
    session.exec(["sh", SOLUTION_PATH], timeout=600)
    session.exec(["rm", "-f", SOLUTION_PATH], timeout=60)


def script_now(session: Session) -> None:
    run_script(session, SCRIPT)


def tests_before(session: Session) -> None:
    session.exec(["rm", "-f", REPORT_PATH], timeout=60)
    session.exec(["sh", "-c", WRITE_REPORT], timeout=60)
    session.get_file(REPORT_PATH)


def tests_now(session: Session) -> None:
    session.exec_then_read(["sh", "-c", f"rm -f {REPORT_PATH} 2>/dev/null; {WRITE_REPORT}"], REPORT_PATH,
                           timeout=60)


STEPS: dict[str, Callable[[Session], None]] = {
    "repair script, before": script_before, "repair script, now": script_now,
    "test run, before": tests_before, "test run, now": tests_now,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("image", nargs="?")
    parser.add_argument("-n", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runtime = Runtime()
    image = args.image or next(t for i in runtime._client.images.list() for t in i.tags if t.startswith("cligym/gold-"))
    figures: dict[str, list[float]] = {name: [] for name in STEPS}
    with runtime.session(image) as session:
        for _ in range(args.rounds):
            for name, step in STEPS.items():
                time.sleep(0.5)
                before = machine_cpu()
                for _ in range(args.n):
                    step(session)
                figures[name].append((machine_cpu() - before) / args.n * 1000)
    if args.json:
        print(json.dumps({"image": image, "n": args.n, "cpu_ms": figures}))
        return
    print(f"machine CPU per step (ms), {args.n} steps a round, in one container of {image}")
    for name, values in figures.items():
        print(f"  {name:22} " + " ".join(f"{v:5.0f}" for v in values) + f"   mean {sum(values) / len(values):5.0f}")


if __name__ == "__main__":
    main()
