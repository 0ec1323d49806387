"""Two ways to run an exported Harbor task's verifier after its solution slot, for the
tests that attack it: cligym's own runner (``run_verifier``: a successor container, the
task's busybox as launcher) and Harbor's way (in the agent's own container, with the
agent's processes still running, ``chmod +x`` and ``test.sh`` started by the image's
bash), which is what an exported task meets in Harbor's CLI."""

from __future__ import annotations

import tomllib

from cligym.harness.trial import (
    TEST_OUTPUT,
    TESTS_DIR,
    VERIFIER_LOGS,
    read_reward,
    run_oracle,
    run_verifier,
)
from cligym.layout import TaskDir
from cligym.models.validate import ModeResult
from cligym.runtime import Session

KEEPALIVE = ("sh", "-c", "sleep infinity")  # PID 1 as Harbor starts a task's container


def harbor_way(session: Session, task: TaskDir) -> ModeResult:
    """tests/ → /tests, then as Harbor 0.25's verifier: ``chmod +x`` and
    ``(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1``, each through ``bash -c``
    with task.toml's ``[environment] env`` (Harbor's persistent env) and no wrapper."""
    env = task_env(task)
    session.exec(["bash", "-c", f"mkdir -p {VERIFIER_LOGS}"], timeout=60, env=env, timer=None)
    session.upload_dir(task.tests, TESTS_DIR)
    session.exec(["bash", "-c", f"chmod +x {TESTS_DIR}/test.sh"], timeout=60, env=env, timer=None)
    session.exec(["bash", "-c", f"({TESTS_DIR}/test.sh) > {TEST_OUTPUT} 2>&1"], timeout=1800, env=env, timer=None)
    output = (session.get_file(TEST_OUTPUT) or b"").decode("utf-8", "replace")
    return read_reward(session, output)


def task_env(task: TaskDir) -> dict[str, str]:
    """task.toml's ``[environment] env`` (empty for a task without one)."""
    if not task.task_toml.is_file():
        return {}
    return tomllib.loads(task.task_toml.read_text()).get("environment", {}).get("env", {})


RUNNERS = {"cligym": run_verifier, "harbor": harbor_way}


def solve_then_judge(runtime, tag: str, task: TaskDir, runner: str, solve: bool = True) -> ModeResult:
    """A container of ``tag`` (PID 1 as Harbor's), the solution slot (unless ``solve`` is
    false: nop), then the verifier run by ``runner``; under Harbor's way the reward is read
    once more a second later (a process still writing it would show) and must not change."""
    with runtime.session(tag, keepalive=KEEPALIVE) as session:
        if solve:
            run_oracle(session, task)
        result = RUNNERS[runner](session, task)
        if runner == "harbor":
            session.exec(["sleep", "1"])
            again = read_reward(session)
            assert again.reward == result.reward, (result, again)
    return result
