"""ATIF trajectories: the recorder writes what Harbor's own models accept, cligym's models read
what Harbor writes, and trajectories turn into OpenAI chat messages."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

from cligym.agents.trajectory import TrajectoryRecorder, to_chat_messages
from cligym.errors import BadInput
from cligym.models.io import load, save
from cligym.models.rollout import RolloutResult
from cligym.models.trajectory import AGENT_ONLY_FIELDS, DEFAULT_SCHEMA_VERSION, Step, Trajectory

ROOT = Path(__file__).resolve().parents[2]
HARBOR_PY = ROOT / ".venv-harbor" / "bin" / "python"
needs_harbor = pytest.mark.skipif(not HARBOR_PY.exists(), reason=".venv-harbor (Harbor's own models) is missing")


def harbor_validate(*paths: Path) -> subprocess.CompletedProcess:
    check = ("import sys, json\nfrom harbor.models.trajectories import Trajectory\n"
             "for p in sys.argv[1:]:\n"
             "    t = Trajectory.model_validate(json.load(open(p)))\n"
             "    print('atif-ok', t.schema_version, len(t.steps))\n")
    return subprocess.run([str(HARBOR_PY), "-c", check, *map(str, paths)], capture_output=True, text=True,
                          timeout=120)


def recorded() -> TrajectoryRecorder:
    rec = TrajectoryRecorder("cligym-llm", "0.1.0", "scripted", "session-42")
    rec.system("You repair environments.")
    rec.user("The tests fail. Fix the environment.")
    rec.agent("Let me look.", tool_calls=[("call_1", "execute_bash", {"command": "cd /testbed && ls"})],
              observations=[("call_1", "setup.py\nsrc\ntests")], prompt_tokens=100, completion_tokens=20)
    rec.agent("", tool_calls=[("call_2", "think", {"thought": "something is broken"}),
                              ("call_3", "str_replace_editor", {"command": "view", "path": "/testbed/setup.py"})],
              observations=[("call_2", "(noted)"), ("call_3", "     1\tfrom setuptools import setup")],
              prompt_tokens=150, completion_tokens=30)
    rec.agent("I am not sure yet.", prompt_tokens=160, completion_tokens=5)
    rec.user("Use the tools to continue the work, or call finish when you are done.")
    rec.agent("", tool_calls=[("call_4", "execute_bash", {"_raw": "{not json"})],
              observations=[("call_4", "error: arguments are not valid JSON")], prompt_tokens=170, completion_tokens=7)
    rec.agent("Done.", tool_calls=[("call_5", "finish", {"summary": "fixed"})], observations=[("call_5", "(finished)")],
              prompt_tokens=180, completion_tokens=9)
    return rec


def test_recorder_builds_a_v18_trajectory():
    trajectory = recorded().finish({"reward": 1.0, "stop_reason": "finished"})
    assert trajectory.schema_version == "ATIF-v1.8" and trajectory.session_id == "session-42"
    assert trajectory.agent.model_dump() == {"name": "cligym-llm", "version": "0.1.0", "model_name": "scripted"}
    assert [s.step_id for s in trajectory.steps] == list(range(1, 9))
    assert [s.source for s in trajectory.steps] == ["system", "user"] + ["agent"] * 3 + ["user"] + ["agent"] * 2
    for step in trajectory.steps:
        datetime.fromisoformat(step.timestamp.replace("Z", "+00:00"))
        assert isinstance(step.message, str)
        if step.source != "agent":
            assert all(getattr(step, name) is None for name in AGENT_ONLY_FIELDS)
    final = trajectory.final_metrics
    assert (final.total_prompt_tokens, final.total_completion_tokens, final.total_steps) == (760, 71, 8)
    assert final.extra == {"reward": 1.0, "stop_reason": "finished"}

    data = json.loads(trajectory.model_dump_json())
    assert data == trajectory.to_json_dict()
    assert "null" not in json.dumps(data)  # None fields are left out, as Harbor's to_json_dict does
    user = data["steps"][1]
    assert set(user) == {"step_id", "timestamp", "source", "message"}
    agent = data["steps"][2]
    assert agent["tool_calls"] == [{"tool_call_id": "call_1", "function_name": "execute_bash",
                                    "arguments": {"command": "cd /testbed && ls"}}]
    assert agent["observation"] == {"results": [{"source_call_id": "call_1", "content": "setup.py\nsrc\ntests"}]}
    assert agent["metrics"] == {"prompt_tokens": 100, "completion_tokens": 20}
    assert "observation" not in data["steps"][4] and "tool_calls" not in data["steps"][4]
    # nothing the recorder was not given: no tool definitions, cached tokens, marks, conventions
    assert set(data) == {"schema_version", "session_id", "agent", "steps", "final_metrics"}
    assert set(data["final_metrics"]) == {"total_prompt_tokens", "total_completion_tokens", "total_steps", "extra"}
    for step in data["steps"]:
        assert not {"llm_call_count", "is_copied_context", "extra", "reasoning_content"} & set(step)
        assert set(step.get("metrics", {})) <= {"prompt_tokens", "completion_tokens"}
        assert all(set(r) == {"source_call_id", "content"} for r in step.get("observation", {}).get("results", []))
    assert Trajectory.model_validate(data) == trajectory


def test_recorder_defaults_and_errors(tmp_path):
    rec = TrajectoryRecorder("a", "1")
    assert rec.session_id  # always set
    with pytest.raises(ValueError, match="at least one step"):
        rec.finish()
    with pytest.raises(ValueError, match="unknown tool call"):
        rec.agent("x", tool_calls=[("c1", "execute_bash", {"command": "ls"})], observations=[("c2", "out")])
    with pytest.raises(ValueError, match="unique"):
        rec.agent("x", tool_calls=[("c1", "think", {}), ("c1", "think", {})])
    rec.agent("no tools, no usage")
    trajectory = rec.finish()
    assert trajectory.steps[0].metrics is None and trajectory.final_metrics.extra is None
    assert trajectory.agent.model_name is None

    # save() finishes the trajectory; it is written atomically and loads back
    rec.user("more")
    path = rec.save(tmp_path / "deep" / "trajectory.json", extra={"reward": 0.0})
    again = load(Trajectory, path)
    assert len(again.steps) == 2 and again.final_metrics.extra == {"reward": 0.0}
    assert not list(path.parent.glob(".*.tmp"))


def test_models_reject_what_harbor_rejects():
    good = recorded().finish().to_json_dict()
    with pytest.raises(ValidationError, match="Extra inputs"):
        Trajectory.model_validate({**good, "surprise": 1})
    bad = json.loads(json.dumps(good))
    bad["steps"][1]["step_id"] = 5
    with pytest.raises(ValidationError, match="sequential"):
        Trajectory.model_validate(bad)
    with pytest.raises(ValidationError, match="only applicable when source is 'agent'"):
        Step(step_id=1, source="user", message="hi", metrics={"prompt_tokens": 1})
    with pytest.raises(ValidationError, match="ISO 8601"):
        Step(step_id=1, source="user", message="hi", timestamp="yesterday")
    bad = json.loads(json.dumps(good))
    bad["steps"][2]["observation"]["results"][0]["source_call_id"] = "nope"
    with pytest.raises(ValidationError, match="not found"):
        Trajectory.model_validate(bad)
    with pytest.raises(ValidationError):
        Trajectory.model_validate({**good, "steps": []})
    with pytest.raises(ValidationError):
        Trajectory.model_validate({**good, "schema_version": "ATIF-v2.0"})


def test_records_save_leaves_none_out(tmp_path):
    trajectory = recorded().finish({"reward": None})
    path = save(trajectory, tmp_path / "t.json")
    data = json.loads(path.read_text())
    assert data["final_metrics"]["extra"] == {"reward": None}  # values inside extra are kept
    assert "model_name" not in data["steps"][2] and "notes" not in data


def test_chat_messages_for_sft():
    messages = to_chat_messages(recorded().finish())
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "tool", "assistant", "user", "assistant", "tool",
        "assistant", "tool",
    ]
    assert messages[2] == {
        "role": "assistant", "content": "Let me look.",
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "execute_bash", "arguments": '{"command": "cd /testbed && ls"}'}}],
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "setup.py\nsrc\ntests"}
    assert [m["tool_call_id"] for m in messages[5:7]] == ["call_2", "call_3"]
    assert messages[7] == {"role": "assistant", "content": "I am not sure yet."}
    assert messages[9]["tool_calls"][0]["function"]["arguments"] == "{not json"  # what the model sent
    for message in messages:
        for call in message.get("tool_calls", []):
            assert isinstance(call["function"]["arguments"], str)


def test_chat_messages_give_every_call_a_tool_message():
    rec = TrajectoryRecorder("a", "1", session_id="s")
    rec.agent("", tool_calls=[("c1", "execute_bash", {"command": "true"})])
    messages = to_chat_messages(rec.finish())
    assert messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": ""}


def test_rollout_result_record(tmp_path):
    record = RolloutResult(task_id="t", attempt=2, agent="llm", reward=1.0, finished=True, stop_reason="finished",
                           steps=21, prompt_tokens=10, completion_tokens=5, seconds=1.5)
    assert record.successful
    assert load(RolloutResult, save(record, tmp_path / "result.json")) == record
    (tmp_path / "bad.json").write_text('{"task_id": "t", "attempt": 0, "agent": "x", "bogus": 1}')
    with pytest.raises(BadInput, match="not a valid RolloutResult"):
        load(RolloutResult, tmp_path / "bad.json")


@needs_harbor
def test_harbor_accepts_recorded_trajectories(tmp_path):
    rec = recorded()
    first = rec.save(tmp_path / "a.json", extra={"reward": 1.0})
    rec2 = TrajectoryRecorder("cligym-nop", "0.1.0")
    rec2.user("Fix it.")
    rec2.agent("(no action)")
    second = rec2.save(tmp_path / "b.json")
    proc = harbor_validate(first, second)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["atif-ok ATIF-v1.8 8", "atif-ok ATIF-v1.8 2"]


@needs_harbor
def test_cligym_reads_what_harbor_writes(tmp_path):
    """A v1.8 trajectory built with Harbor's models (multimodal parts, tool definitions,
    subagents, llm_call_count...) loads with cligym's models and dumps back the same."""
    script = r"""
import json, sys
from harbor.models.trajectories import *
sub = Trajectory(trajectory_id="sub-1", agent=Agent(name="helper", version="1"),
                 steps=[Step(step_id=1, source="agent", message="sub", llm_call_count=0)])
t = Trajectory(
    session_id="s", agent=Agent(name="terminus-2", version="2", model_name="m",
                                tool_definitions=[{"type": "function", "function": {"name": "bash"}}], extra={"k": 1}),
    steps=[
        Step(step_id=1, source="system", message="sys", timestamp="2025-01-01T00:00:00Z"),
        Step(step_id=2, source="user", message=[ContentPart(type="text", text="look"),
             ContentPart(type="image", source=ImageSource(media_type="image/png", path="a.png"))]),
        Step(step_id=3, source="agent", message="ok", reasoning_content="hmm", reasoning_effort="high",
             tool_calls=[ToolCall(tool_call_id="c1", function_name="bash", arguments={"keystrokes": "ls\n"},
                                  extra={"t": 1})],
             observation=Observation(results=[
                 ObservationResult(source_call_id="c1", content="a b", extra={"x": 1}),
                 ObservationResult(subagent_trajectory_ref=[SubagentTrajectoryRef(trajectory_id="sub-1")])]),
             metrics=Metrics(prompt_tokens=5, completion_tokens=2, cached_tokens=1, cost_usd=0.1, logprobs=[-0.1]),
             llm_call_count=1, is_copied_context=False),
    ],
    final_metrics=FinalMetrics(total_prompt_tokens=5, total_cost_usd=0.1, total_steps=3),
    subagent_trajectories=[sub],
)
json.dump(t.to_json_dict(), open(sys.argv[1], "w"))
"""
    path = tmp_path / "harbor.json"
    proc = subprocess.run([str(HARBOR_PY), "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(path.read_text())
    trajectory = Trajectory.model_validate(data)
    assert trajectory.schema_version == "ATIF-v1.8"
    assert trajectory.to_json_dict() == data
    messages = to_chat_messages(trajectory)
    assert messages[1] == {"role": "user", "content": "look"}
    assert messages[2]["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"keystrokes": "ls\\n"}'}
    # a bare subagent reference adds no message
    assert messages[3:] == [{"role": "tool", "tool_call_id": "c1", "content": "a b"}]


#: Every ATIF model's fields as (name, annotation, default, constraints, required), in order,
#: with the defining module left out of type names; and the model's ``extra`` setting.
FIELDS_SCRIPT = r"""
import importlib, json, re, sys
mod = importlib.import_module(sys.argv[1])
names = ["Agent", "AudioSource", "ContentPart", "FinalMetrics", "ImageSource", "Metrics", "Observation",
         "ObservationResult", "Step", "SubagentTrajectoryRef", "ToolCall", "Trajectory"]
def bare(text):
    return re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", re.sub(r"\b(?:harbor|cligym)\.[\w.]+\.(\w+)", r"\1", text))
out = {n: {"extra": getattr(mod, n).model_config.get("extra"),
           "fields": [[k, bare(repr(f.annotation)), repr(f.default), [repr(m) for m in f.metadata], f.is_required()]
                      for k, f in getattr(mod, n).model_fields.items()]} for n in names}
print(json.dumps(out))
"""


def model_fields(python: Path | str, module: str) -> dict:
    proc = subprocess.run([str(python), "-c", FIELDS_SCRIPT, module], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@needs_harbor
def test_default_version_is_the_one_harbor_writes():
    proc = subprocess.run([str(HARBOR_PY), "-c", "from harbor.models.trajectories import Trajectory\n"
                           "print(Trajectory.model_fields['schema_version'].default)"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert DEFAULT_SCHEMA_VERSION == proc.stdout.strip() == "ATIF-v1.8"
    assert Trajectory.model_fields["schema_version"].default == DEFAULT_SCHEMA_VERSION


@needs_harbor
def test_models_mirror_harbor_field_for_field():
    """Same models, same fields in the same order, same types, defaults, constraints and
    ``extra="forbid"``: cligym's models cannot drift from Harbor's unnoticed."""
    ours = model_fields(sys.executable, "cligym.models.trajectory")
    harbors = model_fields(HARBOR_PY, "harbor.models.trajectories")
    assert ours["Metrics"]["fields"][2][0] == "cached_tokens"  # the comparison sees the fields
    for name in harbors:
        assert ours[name] == harbors[name], name
