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
from cligym.export.stage import export
from cligym.rollout.stage import pass_at, rollout
from tests.llm_server import reply, tool_call

ROOT = Path(__file__).resolve().parents[2]
HARBOR_PY = ROOT / ".venv-harbor" / "bin" / "python"


@pytest.fixture(scope="module")
def harbor_tasks(runtime, markupsafe_run, tmp_path_factory):
    tasks = tmp_path_factory.mktemp("rollout") / "tasks"
    export(markupsafe_run / "run", "harbor", tasks, runtime=runtime)
    return tasks


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
        reply("Let me look at the failing tests.", tool_calls=[tool_call("execute_bash", {"command": "cd /testbed && ls"})]),
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
    quick = tmp_path / "model.toml"  # the default retries (5, backed off up to 16 s) take 31 s
    quick.write_text("max_retries = 1\nbackoff_base = 0.1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "cligym", "rollout", str(harbor_tasks), "-o", str(tmp_path / "r"), "--agent", "llm",
         "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--model-config", str(quick), "-q"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "CLIGYM_API_KEY": "x"},
    )
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode != 0 and len(lines) == 1 and "cannot reach the model endpoint" in lines[0]
    assert not list((tmp_path / "r").rglob("result.json")) if (tmp_path / "r").exists() else True
