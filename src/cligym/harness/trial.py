"""Run an exported task the way its harness does: build the task's image, run its oracle
solution, run its verifier, read the reward.

Harbor (Terminal-Bench 2.0): ``solution/`` is copied to ``/solution`` and ``solve.sh``
executed directly, its output in ``/logs/agent/oracle.txt``; after the agent, ``tests/``
is copied to ``/tests`` and ``test.sh`` executed in the image's WORKDIR with its output in
``/logs/verifier``; the reward is the number in ``/logs/verifier/reward.txt``.

Terminal-Bench 1.0: ``solution.sh`` is run with bash; ``tests/`` and ``run-tests.sh`` go to
``$TEST_DIR=/tests``, and the task passes when ``run-tests.sh`` exits 0 and pytest's ``-rA``
summary lists passes and no failure or error.

``test.sh`` is executed directly (after ``chmod +x``, as Harbor does), never handed to a
shell, so its shebang applies: cligym's verifiers name the static busybox shipped in
``tests/bin`` there (see ``cligym.harness.reference``), and ``run-tests.sh`` hands over to it.
Unlike the harnesses, ``run_verifier`` judges a successor of the agent's container (the
same filesystem, none of its processes) and starts the verifier with the task's own
busybox: nothing the agent left, running or installed, runs before it.

The in-container places below are the harnesses' protocol, not cligym's layout: the
exporters write scripts that use them, and these helpers read them back.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from cligym.harness.bundle import harbor_test_sh, write_reference
from cligym.harness.guard import GUARD_BIN, GUARD_MOUNT, compose_env, write_guard
from cligym.harness.images import repair_and_test_in_session, side_by_side
from cligym.layout import TaskDir
from cligym.models.gold import GoldEnv
from cligym.models.reference import GoldReference
from cligym.models.testrun import TestRun
from cligym.models.validate import ModeResult
from cligym.runtime import ImageKind, RunResult, Runtime, Session
from cligym.runtime.sessions import TIMER, tar_dirs

VERIFIER_LOGS = "/logs/verifier"
AGENT_LOGS = "/logs/agent"
REWARD_FILE = f"{VERIFIER_LOGS}/reward.txt"
REWARD_JSON = f"{VERIFIER_LOGS}/reward.json"  # read first, as Harbor does
TEST_OUTPUT = f"{VERIFIER_LOGS}/test-stdout.txt"
ORACLE_OUTPUT = f"{AGENT_LOGS}/oracle.txt"
TESTS_DIR = "/tests"
TB_RUN_TESTS = "/tests/run-tests.sh"  # where Terminal-Bench puts run-tests.sh
SOLUTION_DIR = "/solution"
ORACLE_SCRIPT = "/solution/solve.sh"  # what Harbor's oracle agent runs
TB_SOLUTION = "/tmp/solution.sh"

SOLUTION_TIMEOUT = 900
TESTS_TIMEOUT = 1800


@contextmanager
def agent_session(runtime: Runtime, image: str, task: TaskDir,
                  keepalive: tuple[str, ...] = ("sleep", "infinity")) -> Iterator[Session]:
    """A container of the task's image as its harness starts one for the agent: the
    environment its compose file gives, and its guard where the compose file mounts it, so
    that the agent's ``bash -c`` commands start at the guard's launcher. A copy, not a
    read-only mount (the engine may be on another host): the verdict is taken in a
    successor that gets the guard afresh."""
    guard = tar_dirs([(task.guard, GUARD_MOUNT)]) if task.guard.is_dir() else None
    with runtime.session(image, env=compose_env(task) or None, keepalive=keepalive, preload=guard) as session:
        yield session


def build_task_image(runtime: Runtime, task: TaskDir, kind: ImageKind) -> str:
    """Build the task's environment (BuildFailed when it does not build); returns the tag: a
    scratch kind's, with its name, a hash of its Dockerfile and this process's run id
    (another process may build the same task at once). No build cache is taken: another
    process building the same task at the same time (a rollout and a validate, two test
    runs) would otherwise share its step images, and its clean-up could remove them under
    this build ("unknown parent image ID")."""
    tag = kind.tag(task.name, hashlib.sha256(task.dockerfile.read_bytes()).hexdigest()[:12])
    runtime.build(task.context, tag, nocache=True)
    return tag


@contextmanager
def task_image(runtime: Runtime, task: TaskDir, kind: ImageKind) -> Iterator[str]:
    """The task's image, built on entry and removed on exit."""
    tag = build_task_image(runtime, task, kind)
    try:
        yield tag
    finally:
        runtime.remove_image(tag)


# -- Harbor --------------------------------------------------------------------------------


def run_oracle(session: Session, task: TaskDir) -> RunResult:
    """As Harbor's oracle agent: solution/ → /solution, solve.sh executed directly. The
    result's output is what solve.sh printed (also left in /logs/agent/oracle.txt)."""
    session.upload_dir(task.solution, SOLUTION_DIR)
    run = session.exec(["bash", "-c", f"mkdir -p {AGENT_LOGS}; ({ORACLE_SCRIPT}) > {ORACLE_OUTPUT} 2>&1"],
                       timeout=SOLUTION_TIMEOUT, env={"DEBIAN_FRONTEND": "noninteractive"})
    # read through the engine: after the agent's slot no program of the container runs with
    # the harness's capabilities (``exec_then_read``'s cat would: a replaced loader runs it)
    run.output = (session.get_file(ORACLE_OUTPUT) or b"").decode("utf-8", "replace")
    return run


def run_verifier(session: Session, task: TaskDir) -> ModeResult:
    """As Harbor's verifier, with two differences that leave nothing of the agent's to
    trust: it runs in a successor of the agent's container (its filesystem as the agent
    left it, committed, with none of its processes), and ``test.sh`` is started by the
    task's own busybox (Harbor starts it, and ``chmod +x`` before it, with the image's
    bash). tests/ → /tests, test.sh executed in WORKDIR with its output in
    /logs/verifier; the reward is read as Harbor reads it: reward.json, then reward.txt."""
    with judging(session, task) as (fresh, shell, timer):
        return _test_sh(fresh, task, shell, timer)


def run_verifier_on_image(runtime: Runtime, image: str, task: TaskDir) -> ModeResult:
    """``run_verifier`` for a container of ``image`` in which nothing has run: that
    container is started as the successor would be (tests/ in place, the same PID 1), so
    no commit is needed."""
    keepalive, shell, timer = _launcher(task)
    with runtime.session(image, keepalive=keepalive, preload=_preload(task)) as fresh:
        return _test_sh(fresh, task, shell, timer)


#: The harness's command that runs the test script, as Harbor writes it (and the guard's
#: launcher lets through to its verifier phase).
TEST_COMMAND = f"({TESTS_DIR}/test.sh) > {TEST_OUTPUT} 2>&1"


def _test_sh(fresh: Session, task: TaskDir, shell: list[str], timer: tuple[str, ...]) -> ModeResult:
    """test.sh into the verifier's log: through the task's guard where it has one (the
    same launcher and verifier phase as in Harbor), else under the task's busybox."""
    if task.guard.is_dir():
        fresh.exec([*shell, "-c", f"mkdir -p {VERIFIER_LOGS}"], timeout=60, timer=timer)
        fresh.exec([f"{GUARD_BIN}/bash", "-c", TEST_COMMAND], timeout=TESTS_TIMEOUT, timer=timer)
    else:
        launch = f"mkdir -p {VERIFIER_LOGS} && chmod +x {TESTS_DIR}/test.sh && {TESTS_DIR}/test.sh > {TEST_OUTPUT} 2>&1"
        fresh.exec([*shell, "-c", launch], timeout=TESTS_TIMEOUT, timer=timer)
    output = (fresh.get_file(TEST_OUTPUT) or b"").decode("utf-8", "replace")
    return read_reward(fresh, output)


def _preload(task: TaskDir) -> bytes:
    """What a judging container starts with: tests/ in /tests and, where the task has one,
    its guard folder where its compose file mounts it."""
    guard = [(task.guard, GUARD_MOUNT)] if task.guard.is_dir() else []
    return tar_dirs([(task.tests, TESTS_DIR), *guard])


def _launcher(task: TaskDir) -> tuple[tuple[str, ...], list[str], tuple[str, ...]]:
    """PID 1's program, and the shell and timer to start the verifier with: the task's own
    busybox when it ships one, else the image's bash, as a harness would."""
    busybox = f"{TESTS_DIR}/bin/busybox"
    if task.busybox.is_file():
        return (busybox, "sleep", "infinity"), [busybox, "sh"], (busybox, "timeout", "-s", "KILL")
    return ("sleep", "infinity"), ["bash"], TIMER


@contextmanager
def judging(session: Session, task: TaskDir) -> Iterator[tuple[Session, list[str], tuple[str, ...]]]:
    """A successor of ``session``'s container with the task's tests/ in /tests, and the
    shell and timer to start its verifier with (``_launcher``)."""
    keepalive, shell, timer = _launcher(task)
    with session.successor(keepalive, _preload(task)) as fresh:
        yield fresh, shell, timer


def verdict_line(output: str) -> str:
    """The verifier's own last word (``cligym verifier: reward R: why``), or ""."""
    lines = [line for line in output.splitlines() if line.startswith("cligym verifier: ")]
    return lines[-1] if lines else ""


def read_reward(session: Session, output: str = "") -> ModeResult:
    """The reward as Harbor reads it: ``reward.json``'s ``reward`` when that file exists
    (reward.txt is then ignored), else the number in ``reward.txt``."""
    raw_json = session.get_file(REWARD_JSON)
    if raw_json is not None:
        try:
            value = json.loads(raw_json)["reward"]
            return ModeResult(reward=float(value), detail=verdict_line(output))
        except (ValueError, KeyError, TypeError):
            return ModeResult(reward=None, detail=f"reward.json holds {raw_json[:40]!r}")
    raw = session.get_file(REWARD_FILE)
    if raw is None:
        return ModeResult(reward=None, detail=f"no reward file; test.sh said: {output[-300:]}")
    try:
        return ModeResult(reward=float(raw.decode().strip()), detail=verdict_line(output))
    except ValueError:
        return ModeResult(reward=None, detail=f"reward file holds {raw[:40]!r}")


class Judgement(NamedTuple):
    """What ``judge_image`` saw: the verifier's reward with nothing done; the solution's run
    and the tests after it in its container; the verifier's reward after them (None when
    the solution failed or a test did not pass)."""

    nothing: ModeResult
    fixed: RunResult
    repaired: TestRun
    solved: ModeResult | None


def judge_image(runtime: Runtime, image: str, reference: GoldReference, pristine: bytes, solution: str,
                gold: GoldEnv, tests: list[str], timeout: float = 900) -> Judgement:
    """The rewards the bundled verifier gives a broken image with nothing done (in a fresh
    container), and after ``solution`` (run as the oracle's repair script) and then
    ``tests`` with gold's test command, the way Harbor runs a task's tests/: one container
    for the solution and the tests, judged only when every test passed, its successor
    starting where the tests left off, as it does after an agent that ran them."""
    def repaired(task: TaskDir) -> tuple[RunResult, TestRun, ModeResult | None]:
        with runtime.session(image) as session:
            fixed, run = repair_and_test_in_session(session, gold, solution, tests, timeout)
            if fixed.exit_code != 0 or run.failing(tests):
                return fixed, run, None
            return fixed, run, run_verifier(session, task)

    with tempfile.TemporaryDirectory(prefix="cligym-reference-") as tmp:
        task = TaskDir(Path(tmp))
        write_reference(reference, pristine, task)
        task.test_sh.write_text(harbor_test_sh())
        task.test_sh.chmod(0o755)
        write_guard(task)
        nothing, (fixed, run, solved) = side_by_side(runtime, lambda: run_verifier_on_image(runtime, image, task),
                                                     lambda: repaired(task))
        return Judgement(nothing, fixed, run, solved)


# -- Terminal-Bench 1.0 --------------------------------------------------------------------


def run_tb_solution(session: Session, task: TaskDir) -> RunResult:
    """solution.sh, run with bash as Terminal-Bench's oracle does."""
    session.put_files({TB_SOLUTION: (task.solution_sh.read_bytes(), 0o755)})
    return session.exec(["bash", TB_SOLUTION], timeout=SOLUTION_TIMEOUT)


def run_tb_tests(session: Session, task: TaskDir) -> ModeResult:
    """tests/ and run-tests.sh in $TEST_DIR, judged by the exit status and the -rA summary;
    as ``run_verifier``, in a successor of the agent's container, and with the task's own
    busybox where run-tests.sh would hand over to it (Terminal-Bench runs it with bash)."""
    with judging(session, task) as (fresh, shell, timer):
        fresh.put_files({TB_RUN_TESTS: (task.run_tests_sh.read_bytes(), 0o755)})
        run = fresh.exec([*shell, TB_RUN_TESTS], timeout=TESTS_TIMEOUT, env={"TEST_DIR": TESTS_DIR}, timer=timer)
    passed = len(re.findall(r"^PASSED ", run.output, re.M))
    failed = len(re.findall(r"^(FAILED|ERROR) ", run.output, re.M))
    reward = 1.0 if run.exit_code == 0 and passed and not failed else 0.0
    return ModeResult(reward=reward, detail=f"{passed} passed, {failed} failed/errors in the -rA summary")
