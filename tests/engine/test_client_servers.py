"""The agent loop on a real container against the scripted server imitating real servers'
ways: duplicate tool-call ids and reasoning in the trajectory, no usage, replies cut at
the length limit, a context limit met by condensing outputs."""

from __future__ import annotations

from cligym.agents.client import ModelClient, ModelConfig
from cligym.agents.loop import CUT_OFF, AgentLimits, run_agent
from cligym.agents.tools import ToolExecutor
from cligym.agents.trajectory import TrajectoryRecorder, to_chat_messages
from tests.llm_server import reply, tool_call

FINISH = reply(tool_calls=[tool_call("finish", {"summary": "done"})])


def _client(server, **settings) -> ModelClient:
    return ModelClient(ModelConfig(model="scripted", base_url=server.base_url,
                                   **{"max_retries": 3, "backoff_base": 0.01, **settings}))


def test_duplicate_tool_call_ids_and_reasoning_reach_the_trajectory(runtime, base_image, scripted_server):
    twice = reply("two at once", reasoning="both now", tool_calls=[
        tool_call("execute_bash", {"command": "echo one"}, id="call_0"),
        tool_call("execute_bash", {"command": "echo two"}, id="call_0")])
    server = scripted_server([twice, FINISH])
    recorder = TrajectoryRecorder(agent_name="t", version="0", model_name="scripted", session_id="s")
    with runtime.session(base_image) as session:
        outcome = run_agent(_client(server), ToolExecutor(session), system="s", task="t", limits=AgentLimits(),
                            recorder=recorder)
    assert outcome.finished
    trajectory = recorder.finish()
    step = [s for s in trajectory.steps if s.source == "agent"][0]
    assert len({c.tool_call_id for c in step.tool_calls}) == 2 and step.reasoning_content == "both now"
    sft = [m for m in to_chat_messages(trajectory) if m["role"] == "assistant"][0]  # what curate writes
    assert sft["reasoning_content"] == "both now" and sft["content"] == "two at once"
    sent = [m["tool_call_id"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(set(sent)) == 2


def test_no_usage_is_estimated_and_the_token_limit_still_stops(runtime, base_image, scripted_server):
    loop = reply(tool_calls=[tool_call("execute_bash", {"command": "seq 1 300"})])
    server = scripted_server([loop] * 10, usage=False)
    recorder = TrajectoryRecorder(agent_name="t", version="0", model_name="scripted", session_id="s")
    with runtime.session(base_image) as session:
        outcome = run_agent(_client(server), ToolExecutor(session), system="s", task="t",
                            limits=AgentLimits(max_tokens=2000), recorder=recorder)
    assert outcome.stop_reason == "max_tokens" and outcome.steps < 10 and outcome.prompt_tokens > 0
    step = [s for s in recorder.finish().steps if s.source == "agent"][0]
    assert step.metrics.extra == {"usage_estimated": True}


def test_a_reply_cut_at_the_length_limit_is_told_so(runtime, base_image, scripted_server):
    server = scripted_server([reply("I will now write a very long", finish_reason="length"), FINISH])
    recorder = TrajectoryRecorder(agent_name="t", version="0", model_name="scripted", session_id="s")
    with runtime.session(base_image) as session:
        outcome = run_agent(_client(server), ToolExecutor(session), system="s", task="t", limits=AgentLimits(),
                            recorder=recorder)
    assert outcome.finished
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": CUT_OFF}
    step = [s for s in recorder.finish().steps if s.source == "agent"][0]
    assert step.metrics.extra == {"finish_reason": "length"}


def test_a_context_limit_is_met_by_condensing_outputs(runtime, base_image, scripted_server):
    """The second request carries a 9,000-character output, over the server's 1,500-token
    context: refused with vLLM's 400, the output is shortened and the request goes through."""
    server = scripted_server([reply(tool_calls=[tool_call("execute_bash", {"command": "seq 1 2000"})]), FINISH],
                             context_limit=1500)
    with runtime.session(base_image) as session:
        outcome = run_agent(_client(server), ToolExecutor(session), system="s", task="t", limits=AgentLimits())
    assert outcome.finished and len(server.requests) == 3
    shortened = [m for m in server.requests[2]["messages"] if m["role"] == "tool"][0]["content"]
    assert "left out to fit the model's context" in shortened and len(shortened) < 600
