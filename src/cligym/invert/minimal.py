"""Minimality of a composite broken state: is every operator in it necessary?

A state made by several operators keeps an operator only if leaving that operator's ΔD
out changes the outcome: some FAIL_TO_PASS test passes without it (the tests it "fixes"
by its absence are the ones it is responsible for). An operator whose absence changes
nothing is a decoy: its breakage is hidden behind another one, so an agent that undoes
only the others would be rewarded while the decoy stays broken.

``evidence`` builds gold + ΔD without each operator in turn (from scratch, like every
broken image) and runs the F2P tests in a fresh container; the answer is, per operator,
the F2P tests that pass without it. The pipeline then drops the decoys and checks the
smaller state again from the start.
"""

from __future__ import annotations

import time
import uuid

from cligym.errors import BuildFailed
from cligym.harness.images import build_broken
from cligym.harness.testrun import hang_timeout, run_tests
from cligym.models.gold import GoldEnv
from cligym.runtime import Runtime


def evidence(runtime: Runtime, gold: GoldEnv, parts: list[list[str]], f2p: list[str],
             order: list[str]) -> list[list[str]]:
    """For each part (one operator's ΔD lines), the F2P tests that pass when that part is
    left out, in ``order``. A state whose remainder does not build counts as changed: every
    F2P test is listed (the part is necessary for the others to make sense)."""
    wanted = set(f2p)
    tests = [t for t in order if t in wanted] or sorted(wanted)
    out: list[list[str]] = []
    for index in range(len(parts)):
        rest = [line for i, part in enumerate(parts) if i != index for line in part]
        tag = f"cligym/minimal:{uuid.uuid4().hex[:12]}"
        try:
            build_broken(runtime, gold, rest, tag)
            run = run_tests(runtime, tag, gold.workdir, gold.test_command, tests,
                            timeout=hang_timeout(gold.test_seconds))
        except BuildFailed:
            out.append(list(tests))
            continue
        finally:
            runtime.remove_image(tag)
        passing = run.passed() if run.report_found else set()
        out.append([t for t in tests if t in passing])
    return out


def check(runtime: Runtime, gold: GoldEnv, parts: list[list[str]], f2p: list[str],
          order: list[str], seconds: dict[str, float]) -> tuple[list[bool], list[list[str]]]:
    """(necessary, fixes) per part; the time spent is added to ``seconds['minimal']``."""
    started = time.monotonic()
    fixes = evidence(runtime, gold, parts, f2p, order)
    seconds["minimal"] = seconds.get("minimal", 0.0) + time.monotonic() - started
    return [bool(f) for f in fixes], fixes
