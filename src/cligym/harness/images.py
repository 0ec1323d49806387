"""Turning a Dockerfile delta into a broken image, and repairing one with a script."""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar, cast

from cligym.config import LABEL, home
from cligym.harness.testrun import hang_timeout, run_tests, run_tests_in_session
from cligym.models.gold import GoldEnv
from cligym.models.testrun import TestRun
from cligym.runtime import ImageKind, RunResult, Runtime, Session

SOLUTION_PATH = "/tmp/cligym-solve.sh"
A = TypeVar("A")
B = TypeVar("B")


def side_by_side(runtime: Runtime, other: Callable[[], A], this: Callable[[], B]) -> tuple[A, B]:
    """``other()`` in a second thread while ``this()`` runs in this one: two containers at
    once (``at_once``)."""
    mine, theirs = at_once(runtime, [this, other])
    return cast(A, theirs), cast(B, mine)


def at_once(runtime: Runtime, calls: Sequence[Callable[[], object]]) -> list:
    """Every call of ``calls`` at once (several containers), the first in this thread, the
    others each in a thread of its own; their results in order. Interrupted here (Ctrl-C,
    SIGTERM), this process's containers are removed before the interruption goes on, so the
    other threads' engine calls end at once instead of running out their timeouts while the
    process waits for them."""
    if len(calls) < 2:
        return [call() for call in calls]
    with ThreadPoolExecutor(max_workers=len(calls) - 1) as pool:
        futures = [pool.submit(call) for call in calls[1:]]
        try:
            mine = calls[0]()
            return [mine, *(f.result() for f in futures)]
        except KeyboardInterrupt:
            runtime.remove_labelled_containers(mine=True)
            raise


def dockerfile_text(base: str, lines: Iterable[str]) -> str:
    return "\n".join([f"FROM {base}", *lines]) + "\n"


def delta_digest(gold: GoldEnv, lines: list[str]) -> str:
    """A short hash naming a ΔD on its gold image (the same delta gets the same name)."""
    return hashlib.sha256("\n".join([gold.image_id, *lines]).encode()).hexdigest()[:10]


def broken_tag(gold: GoldEnv, digest: str) -> str:
    """The broken state's scratch tag: its delta's digest and this process's run id (two
    runs at once on one gold, say two dataset builds, may make the same state, and each
    removes its own image)."""
    return ImageKind.BROKEN.tag(gold.source.name, digest)


def extra_bytes(runtime: Runtime, gold: GoldEnv, image: str) -> int | None:
    """How much bigger ``image`` is than the gold image (None when gold's size is unknown)."""
    return max(0, runtime.image_size(image) - gold.image_bytes) if gold.image_bytes else None


def joined_runs(lines: Iterable[str]) -> list[str]:
    """ΔD's lines as one build makes them: each run of consecutive plain ``RUN`` lines as one
    ``RUN`` (one container and one commit instead of one a line: the files it leaves are the
    same), each line in a subshell of its own after the one before succeeded, as separate
    ``RUN`` lines run. Other lines stay as they are, and split the runs; a ΔD that changes
    the shell is left whole."""
    lines = list(lines)
    if any(line.lstrip().upper().startswith("SHELL") for line in lines):
        return lines
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(f"RUN {run[0]}")
        elif run:
            script = " && ".join(f"(\n{command}\n)" for command in run)
            out.append("RUN " + json.dumps(["/bin/sh", "-c", script]))
        run.clear()

    for line in lines:
        head, _, rest = line.strip().partition(" ")
        if head.upper() == "RUN" and rest and not rest.lstrip().startswith(("--", "[")) and "\n" not in rest:
            run.append(rest.strip())
        else:
            flush()
            out.append(line)
    flush()
    return out


def build_broken(runtime: Runtime, gold: GoldEnv, lines: list[str], tag: str) -> str:
    """Build gold + ΔD from scratch (no layer cache) as ``tag``, its runs of ``RUN`` lines
    joined (``joined_runs``; the exported Dockerfile keeps them apart); returns the tag.

    Raises BuildFailed when a ΔD line fails.
    """
    root = home() / "build"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        (Path(tmp) / "Dockerfile").write_text(dockerfile_text(gold.image, joined_runs(lines)))
        runtime.build(Path(tmp), tag, nocache=True, labels={f"{LABEL}.broken": "1"})
    return tag


def repair_and_test(
    runtime: Runtime, image: str, gold: GoldEnv, solution: str, tests: list[str], timeout: float = 900
) -> tuple[int | None, str, TestRun]:
    """Run the solution script in a container of ``image``, then the tests in the same
    container. Returns the script's exit code and output, and the test run."""
    with runtime.session(image) as session:
        fixed, run = repair_and_test_in_session(session, gold, solution, tests, timeout)
    return fixed.exit_code, fixed.output, run


def repair_and_test_in_session(session: Session, gold: GoldEnv, solution: str, tests: list[str],
                               timeout: float = 900) -> tuple[RunResult, TestRun]:
    """``repair_and_test`` in a running container (which stays, e.g. for a verifier)."""
    fixed = run_script(session, solution)
    return fixed, run_tests_in_session(session, gold.workdir, gold.test_command, tests, timeout=timeout)


#: A script up to this size goes into its container as an argument of the command that
#: runs it (one engine call; the kernel takes 128 KiB in one argument); a larger one, or
#: one holding a NUL byte, is copied in first.
INLINE_SCRIPT_BYTES = 96 * 1024

#: Writes "$1" (the script) to "$2", runs it with sh, removes it and exits as it did: all
#: with the shell's builtins but rm, which the copy-in way ran too.
_INLINE = 'printf %s "$1" > "$2" && { sh "$2"; code=$?; rm -f "$2"; exit $code; }'


def run_script(session: Session, script: str) -> RunResult:
    """Run a repair script in a running container (written to a scratch path, run with sh,
    removed after)."""
    if len(script.encode()) <= INLINE_SCRIPT_BYTES and "\0" not in script:
        return session.exec(["sh", "-c", _INLINE, "sh", script, SOLUTION_PATH], timeout=600)
    session.put_files({SOLUTION_PATH: (script, 0o755)})
    result = session.exec(["sh", SOLUTION_PATH], timeout=600)
    session.exec(["rm", "-f", SOLUTION_PATH], timeout=60)
    return result


def selected_run_seconds(runtime: Runtime, gold: GoldEnv, samples: list[list[str]]) -> float | None:
    """The median wall time of one run of a sample's tests in a fresh container of the gold
    image (made, started, the tests run, removed), over the first three of ``samples``: half
    the physical limit of a task (one run in the broken state, one after the repair)."""
    times = []
    for sample in [s for s in samples if s][:3]:
        started = time.monotonic()
        run_tests(runtime, gold.image, gold.workdir, gold.test_command, sample, timeout=hang_timeout(gold.test_seconds))
        times.append(time.monotonic() - started)
    return sorted(times)[len(times) // 2] if times else None
