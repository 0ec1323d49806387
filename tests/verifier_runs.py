"""Two ways to run an exported Harbor task's verifier after its solution slot, for the
tests that attack it: cligym's own runner (``run_verifier``: a successor container, the
task's busybox as launcher) and Harbor's way (in the agent's own container, with the
agent's processes still running, ``chmod +x`` and ``test.sh`` started by the image's
bash), which is what an exported task meets in Harbor's CLI."""

from __future__ import annotations

import shutil
import tomllib

import yaml

from cligym.harness.guard import compose_env
from cligym.harness.trial import (
    REWARD_FILE,
    REWARD_JSON,
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
    """As Harbor 0.26's verifier: the reward files removed, tests/ → /tests (merged into
    whatever is there), ``chmod +x`` and ``(/tests/test.sh) > /logs/verifier/test-stdout.txt
    2>&1``, each through ``bash -c`` with task.toml's ``[environment] env`` and no wrapper,
    ``bash`` found on the container's PATH (the compose file's, see ``harbor_container``)."""
    env = task_env(task)
    session.exec(["bash", "-c", f"mkdir -p {VERIFIER_LOGS}"], timeout=60, env=env, timer=None)
    session.exec(["bash", "-c", f"rm -f -- {REWARD_FILE} {REWARD_JSON}"], timeout=60, env=env, timer=None)
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


def compose_main(task: TaskDir) -> tuple[dict[str, str], dict[str, str]]:
    """The container environment and read-only mounts (host → container) that the task's
    ``environment/docker-compose.yaml`` gives its ``main`` service (none without one)."""
    if not task.harbor_compose.is_file():
        return {}, {}
    main = yaml.safe_load(task.harbor_compose.read_text())["services"]["main"]
    mounts = {}
    for volume in main.get("volumes", []):
        src, dest, mode = volume.split(":")
        assert mode == "ro", volume
        mounts[str((task.environment / src).resolve())] = dest
    return compose_env(task), mounts


def naive_tests(task: TaskDir, test_sh: str) -> None:
    """Make ``task`` a naive one: its tests/ only ``test_sh``, and no guard (a naive task
    ships none, and the guard's sums would refuse the naive tests)."""
    shutil.rmtree(task.tests)
    task.tests.mkdir()
    task.test_sh.write_text(test_sh)
    task.test_sh.chmod(0o755)
    shutil.rmtree(task.guard, ignore_errors=True)
    task.harbor_compose.unlink(missing_ok=True)


def harbor_container(runtime, tag: str, task: TaskDir):
    """A container of ``tag`` as Harbor's docker environment starts one for the task: PID 1
    ``sh -c "sleep infinity"``, the compose file's environment and read-only mounts."""
    env, mounts = compose_main(task)
    return runtime.session(tag, keepalive=KEEPALIVE, env=env or None, read_only=mounts or None)


RUNNERS = {"cligym": run_verifier, "harbor": harbor_way}


def solve_then_judge(runtime, tag: str, task: TaskDir, runner: str, solve: bool = True,
                     steady: bool = True) -> ModeResult:
    """A container of ``tag`` (PID 1 as Harbor's), the solution slot (unless ``solve`` is
    false: nop), then the verifier run by ``runner``; under Harbor's way the reward is read
    once more a second later (a process still writing it would show) and must not change
    (unless not ``steady``: a naive verifier's reward is an attack's to keep writing, and the
    later reading is the one taken, as a harness that copies the logs first reads it; read
    at once, a loop that rewrites it every 50 ms may not have come round on a loaded
    machine)."""
    with harbor_container(runtime, tag, task) as session:
        if solve:
            run_oracle(session, task)
        result = RUNNERS[runner](session, task)
        if runner == "harbor":
            session.exec(["sleep", "1"])
            again = read_reward(session)
            if not steady:
                return again
            assert again.reward == result.reward, (result, again)
    return result
