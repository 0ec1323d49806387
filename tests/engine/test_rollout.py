"""Repair rollouts on real exported tasks: oracle, nop, and an LLM agent (scripted server)
that reaches reward 1; trajectories are ATIF and validate against Harbor's model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cligym.agents.client import ModelClient, ModelConfig
from cligym.rollout.stage import pass_at, rollout
from tests.llm_server import reply, sampled, tool_call

ROOT = Path(__file__).resolve().parents[2]
HARBOR_PY = ROOT / ".venv-harbor" / "bin" / "python"


@pytest.fixture(scope="module")
def harbor_tasks(markupsafe_harbor):
    """The markupsafe run's Harbor tasks (made once per test run; rollouts only read them)."""
    return markupsafe_harbor


def test_pass_at_k_estimator():
    assert pass_at(4, 0, 1) == 0.0 and pass_at(4, 4, 1) == 1.0
    assert pass_at(4, 1, 1) == pytest.approx(0.25) and pass_at(4, 1, 4) == 1.0
    assert pass_at(5, 2, 2) == pytest.approx(1 - 3 / 10)


def test_oracle_and_nop_rollouts(harbor_tasks, runtime, tmp_path):
    oracle = rollout(harbor_tasks, tmp_path / "oracle", agent="oracle", k=1, runtime=runtime)
    nop = rollout(harbor_tasks, tmp_path / "nop", agent="nop", k=1, runtime=runtime)
    assert oracle.tasks >= 1 and oracle.pass_at_1 == 1.0
    assert nop.pass_at_1 == 0.0
    again = rollout(harbor_tasks, tmp_path / "oracle", agent="oracle", k=1, runtime=runtime)
    assert again.attempts == oracle.attempts  # finished attempts are not redone


@pytest.mark.slow  # concurrency stays in the default run with the rate-limit and Ctrl-C cases below
def test_concurrent_rollouts_give_the_same_results(harbor_tasks, runtime, tmp_path):
    """Tasks rolled out three at once (oracle, k=2) give the per-task results of one at a
    time, and leave no container of this process behind."""
    some = tmp_path / "tasks"
    for task in sorted(p for p in harbor_tasks.iterdir() if p.is_dir())[:3]:
        shutil.copytree(task, some / task.name)
    before = set(runtime.labelled_containers(mine=True))
    one = rollout(some, tmp_path / "one", agent="oracle", k=2, runtime=runtime, workers=1)
    three = rollout(some, tmp_path / "three", agent="oracle", k=2, runtime=runtime, workers=3)
    verdicts = sorted((p.parent.parent.name, p.parent.parent.parent.name, json.loads(p.read_text())["verdict"])
                      for p in tmp_path.glob("*/*/*/result.json"))
    assert three.per_task == one.per_task, [v for v in verdicts if "reward 1" not in v[2]]
    assert three.attempts == one.attempts == 2 * one.tasks
    assert set(runtime.labelled_containers(mine=True)) == before


def test_llm_repair_rollout_reaches_reward_one(harbor_tasks, runtime, tmp_path, scripted_server):
    task_dir = sorted(p for p in harbor_tasks.iterdir() if p.is_dir())[0]
    single = tmp_path / "one"
    single.mkdir()
    (single / task_dir.name).symlink_to(task_dir)
    fix = (task_dir / "solution" / "solve.sh").read_text()
    server = scripted_server([
        reply("Let me look at the failing tests.",
              tool_calls=[tool_call("execute_bash", {"command": "cd /testbed && ls"})]),
        reply(tool_calls=[tool_call("think", {"thought": "the environment was changed; repair it"})]),
        reply(tool_calls=[tool_call("execute_bash", {"command": fix})]),
        reply("Fixed.", tool_calls=[tool_call("finish", {"summary": "repaired the environment"})]),
    ])
    client = ModelClient(ModelConfig(model="scripted", base_url=server.base_url))
    summary = rollout(single, tmp_path / "llm", agent="llm", k=1, client=client, runtime=runtime)
    assert summary.pass_at_1 == 1.0 and summary.prompt_tokens > 0
    attempt = tmp_path / "llm" / task_dir.name / "000"
    result = json.loads((attempt / "result.json").read_text())
    assert result["reward"] == 1.0 and result["stop_reason"] == "finished" and result["steps"] == 4
    trajectory = json.loads((attempt / "trajectory.json").read_text())
    assert trajectory["schema_version"].startswith("ATIF-") and trajectory["session_id"]
    assert [s["step_id"] for s in trajectory["steps"]] == list(range(1, len(trajectory["steps"]) + 1))
    assert any(s.get("tool_calls") for s in trajectory["steps"] if s["source"] == "agent")
    if HARBOR_PY.exists():
        check = ("import sys, json; from harbor.models.trajectories import Trajectory; "
                 "Trajectory.model_validate(json.load(open(sys.argv[1]))); print('atif-ok')")
        proc = subprocess.run([str(HARBOR_PY), "-c", check, str(attempt / "trajectory.json")],
                              capture_output=True, text=True)
        assert "atif-ok" in proc.stdout, proc.stderr


def test_unreachable_endpoint_stops_with_one_line_and_writes_nothing(harbor_tasks, tmp_path):
    quick = tmp_path / "model.toml"  # quicker than the default back-off
    quick.write_text("max_retries = 1\nbackoff_base = 0.1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "cligym", "rollout", str(harbor_tasks), "-o", str(tmp_path / "r"), "--agent", "llm",
         "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--model-config", str(quick), "-q"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "CLIGYM_API_KEY": "x"},
    )
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode != 0 and len(lines) == 1 and "cannot reach the model endpoint" in lines[0]
    assert not list((tmp_path / "r").rglob("result.json")) if (tmp_path / "r").exists() else True


# --- the LLM path under load: rate limits, sampling across attempts, Ctrl-C


def _working(command: str):
    """A model that runs ``command``, then finishes (decided from the conversation)."""
    def answer(messages):
        if messages[-1]["role"] == "tool":
            return reply(tool_calls=[tool_call("finish", {"summary": "done"})])
        return reply(tool_calls=[tool_call("execute_bash", {"command": command})])
    return answer


def _tasks(harbor_tasks: Path, into: Path, n: int) -> Path:
    into.mkdir()
    for task in sorted(p for p in harbor_tasks.iterdir() if p.is_dir())[:n]:
        (into / task.name).symlink_to(task)
    return into


def test_four_workers_under_rate_limits_finish_every_attempt(harbor_tasks, runtime, tmp_path, scripted_server):
    """A 429 for about a quarter of the requests, every other one with Retry-After: every
    attempt of four workers ends as it would without them."""
    server = scripted_server([_working("cd /testbed && ls")] * 40, rate_limit=0.25, retry_after="mixed")
    client = ModelClient(ModelConfig(model="scripted", base_url=server.base_url, backoff_base=0.2))
    summary = rollout(_tasks(harbor_tasks, tmp_path / "tasks", 4), tmp_path / "out", agent="llm", k=1,
                      client=client, runtime=runtime, workers=4)
    statuses = [status for _, status in server.answers]
    assert summary.attempts == 4 and statuses.count(429) >= 2
    results = [json.loads(p.read_text()) for p in (tmp_path / "out").rglob("result.json")]
    assert [r["stop_reason"] for r in results] == ["finished"] * 4, results


def _sampling_script(k: int) -> list:
    step = [sampled(*[reply(f"try {i}", [tool_call("execute_bash", {"command": f"echo {i}"})]) for i in range(100)])]
    return [*step, *step, reply(tool_calls=[tool_call("finish", {"summary": "done"})])] * k


def _agent_turns(out: Path) -> list[tuple]:
    found = []
    for path in sorted(out.rglob("trajectory.json")):
        steps = json.loads(path.read_text())["steps"]
        found.append(tuple(s.get("message") for s in steps if s["source"] == "agent"))
    return found


@pytest.mark.slow  # pass@k's estimator is a unit test; the seeds' reproduction a long case
def test_k_attempts_sample_apart_and_a_seed_reproduces_them(harbor_tasks, runtime, tmp_path, scripted_server):
    """-k 4 at temperature 0.8: four different trajectories; with a seed, attempts that
    differ, and the same again."""
    one = _tasks(harbor_tasks, tmp_path / "tasks", 1)
    runs = {}
    for name, seed, k in (("free", None, 4), ("seeded", 3, 2), ("again", 3, 2)):
        server = scripted_server(_sampling_script(k))
        client = ModelClient(ModelConfig(model="scripted", base_url=server.base_url, temperature=0.8, seed=seed))
        rollout(one, tmp_path / name, agent="llm", k=k, client=client, runtime=runtime)
        runs[name] = _agent_turns(tmp_path / name)
    assert len(set(runs["free"])) == 4 and len(set(runs["seeded"])) == 2
    assert runs["seeded"] == runs["again"]


def test_ctrl_c_stops_four_busy_workers_within_seconds(harbor_tasks, runtime, tmp_path, scripted_server):
    """Four workers each in a long command; SIGINT: the command ends within 10 s with the
    resume line, exit 130 and none of its containers left."""
    import signal
    import time

    server = scripted_server([_working("sleep 300")] * 8)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cligym", "rollout", str(_tasks(harbor_tasks, tmp_path / "tasks", 4)), "-o",
         str(tmp_path / "out"), "--agent", "llm", "--model", "m", "--base-url", server.base_url, "--workers", "4",
         "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while len(server.requests) < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert len(server.requests) >= 4, proc.communicate(timeout=30)
        time.sleep(2)  # the commands are running
        asked = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - asked
    finally:
        if proc.poll() is None:
            proc.kill()
    assert took < 10, (took, err)
    assert proc.returncode == 130 and "run the same command to resume" in err, err
    assert "Thread" not in err and not runtime.labelled_containers(pid=proc.pid)
