"""What the recorder says about what the model really saw: cached prompt tokens, the tool
definitions it was offered, observations it later saw shortened, and whether its earlier
reasoning went back to it; and Harbor's own validator accepts all of it."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from cligym.agents.trajectory import TrajectoryRecorder, reasoning_history, to_chat_messages
from cligym.models.io import load
from cligym.models.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[2]
HARBOR_PY = ROOT / ".venv-harbor" / "bin" / "python"
needs_harbor = pytest.mark.skipif(not HARBOR_PY.exists(), reason=".venv-harbor (Harbor's own models) is missing")

BASH = {"type": "function", "function": {"name": "execute_bash", "description": "Run a command.",
                                         "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                                                        "required": ["command"]}}}
FINISH = {"type": "function", "function": {"name": "finish", "description": "Done.",
                                           "parameters": {"type": "object", "properties": {}}}}


def three_turns(**kwargs) -> TrajectoryRecorder:
    """system, user, then three agent turns with reasoning (c1, c2 and finish's c3)."""
    rec = TrajectoryRecorder("cligym-llm", "0.1.0", "m", "s", **kwargs)
    rec.system("sys")
    rec.user("Fix it.")
    rec.agent("", tool_calls=[("c1", "execute_bash", {"command": "ls"})], observations=[("c1", "x" * 1000)],
              prompt_tokens=100, completion_tokens=10, cached_tokens=0, reasoning_content="first thought")
    rec.agent("", tool_calls=[("c2", "execute_bash", {"command": "pwd"})], observations=[("c2", "/testbed")],
              prompt_tokens=300, completion_tokens=10, cached_tokens=96, reasoning_content="second thought")
    rec.agent("Done.", tool_calls=[("c3", "finish", {})], observations=[("c3", "(finished)")],
              prompt_tokens=320, completion_tokens=5, cached_tokens=288, reasoning_content="last thought")
    return rec


def test_cached_tokens_per_step_and_in_total():
    trajectory = three_turns().finish()
    assert [s.metrics.cached_tokens for s in trajectory.agent_steps] == [0, 96, 288]
    assert trajectory.final_metrics.total_cached_tokens == 384
    assert trajectory.to_json_dict()["steps"][3]["metrics"] == {"prompt_tokens": 300, "completion_tokens": 10,
                                                                 "cached_tokens": 96}
    # cached tokens alone make metrics; a step without them does not count
    rec = TrajectoryRecorder("a", "1")
    rec.agent("x", cached_tokens=7)
    rec.agent("y", prompt_tokens=5)
    assert rec.finish().steps[0].metrics.model_dump() == {"cached_tokens": 7}
    assert rec.finish().final_metrics.total_cached_tokens == 7
    # no step had any: the total is absent, not 0
    rec = TrajectoryRecorder("a", "1")
    rec.agent("x", prompt_tokens=5, completion_tokens=1)
    final = rec.finish().final_metrics
    assert final.total_cached_tokens is None and "total_cached_tokens" not in final.model_dump()


def test_tool_definitions_go_into_the_agent():
    tools = copy.deepcopy([BASH, FINISH])
    rec = TrajectoryRecorder("cligym-llm", "0.1.0", tool_definitions=tools)
    tools[0]["function"]["name"] = "changed later"  # the record keeps what was offered then
    rec.user("hi")
    trajectory = rec.finish()
    assert [t["function"]["name"] for t in trajectory.agent.tool_definitions] == ["execute_bash", "finish"]
    assert trajectory.to_json_dict()["agent"]["tool_definitions"][1] == FINISH
    assert TrajectoryRecorder("a", "1", tool_definitions=[]).agent_info.tool_definitions == []  # no tools at all


def test_mark_condensed_marks_the_observation_and_keeps_it_whole(tmp_path):
    rec = three_turns()
    before = rec.finish()
    rec.steps[2].observation.results[0].extra = {"exit_code": 0}  # an extra already there is kept
    # the second agent step (step_id 4) was the first whose prompt held c1's output shortened
    assert rec.mark_condensed("c1", 200, at_step=2) is True
    assert rec.mark_condensed("nope", 200, at_step=2) is False  # unknown call: nothing happens
    assert rec.mark_condensed("c1", 200, at_step=3) is True  # marked again: from the first step on
    result = rec.finish().steps[2].observation.results[0]
    assert result.content == "x" * 1000  # the stored observation stays whole
    assert result.extra == {"exit_code": 0, "condensed": {"kept_chars": 200, "from_step": 2}}
    assert before.steps[2].observation.results[0].extra is None  # an earlier finish() is a copy
    # the mark survives finish's deep copy, save() after a mark, and a load
    saved = load(Trajectory, rec.save(tmp_path / "t.json"))
    assert saved.steps[2].observation.results[0].extra["condensed"] == {"kept_chars": 200, "from_step": 2}
    assert saved.steps[3].observation.results[0].extra is None
    rec.mark_condensed("c1", 80, at_step=4)  # shortened further: the new mark replaces it
    assert rec.finish().steps[2].observation.results[0].extra["condensed"] == {"kept_chars": 80, "from_step": 4}


def reasonings(trajectory: Trajectory) -> list[str | None]:
    return [m.get("reasoning_content") for m in to_chat_messages(trajectory) if m["role"] == "assistant"]


def test_reasoning_history_decides_which_turns_keep_reasoning():
    send_back = three_turns(reasoning_history="send-back").finish()
    assert send_back.agent.extra == {"reasoning_history": "send-back"}
    assert reasoning_history(send_back) == "send-back"
    assert reasonings(send_back) == ["first thought", "second thought", "last thought"]
    drop = three_turns(reasoning_history="drop").finish()
    assert drop.to_json_dict()["agent"]["extra"] == {"reasoning_history": "drop"}
    assert reasonings(drop) == [None, None, "last thought"]  # only the last turn's reasoning was in context
    older = three_turns().finish()
    assert older.agent.extra is None and reasoning_history(older) is None
    assert reasonings(older) == ["first thought", "second thought", "last thought"]  # as before
    # another producer's extra: the convention is read next to its keys; an unknown one is ignored
    other = older.model_copy(update={"agent": older.agent.model_copy(update={"extra": {
        "k": 1, "reasoning_history": "drop"}})})
    assert reasonings(other) == [None, None, "last thought"]
    odd = older.model_copy(update={"agent": older.agent.model_copy(update={"extra": {"reasoning_history": "x"}})})
    assert reasoning_history(odd) is None and reasonings(odd) == reasonings(older)
    with pytest.raises(ValueError, match="reasoning_history"):
        TrajectoryRecorder("a", "1", reasoning_history="keep")


HARBOR_VALIDATE = r"""
import json, sys
from harbor.models.trajectories import Trajectory
from harbor.utils.trajectory_validator import TrajectoryValidator
validator = TrajectoryValidator()
if not validator.validate(sys.argv[1]):
    sys.exit("\n".join(validator.get_errors()))
t = Trajectory.model_validate(json.load(open(sys.argv[1])))
print(json.dumps({"version": t.schema_version, "tools": [d["function"]["name"] for d in t.agent.tool_definitions],
                  "agent_extra": t.agent.extra, "cached": [s.metrics.cached_tokens for s in t.steps if s.metrics],
                  "total_cached": t.final_metrics.total_cached_tokens,
                  "extra": t.steps[2].observation.results[0].extra}))
"""


@needs_harbor
def test_harbors_validator_accepts_what_the_recorder_says(tmp_path):
    rec = three_turns(tool_definitions=[BASH, FINISH], reasoning_history="drop")
    rec.mark_condensed("c1", 200, at_step=2)
    path = rec.save(tmp_path / "trajectory.json", extra={"reward": 1.0})
    proc = subprocess.run([str(HARBOR_PY), "-c", HARBOR_VALIDATE, str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "version": "ATIF-v1.8", "tools": ["execute_bash", "finish"], "agent_extra": {"reasoning_history": "drop"},
        "cached": [0, 96, 288], "total_cached": 384, "extra": {"condensed": {"kept_chars": 200, "from_step": 2}},
    }
