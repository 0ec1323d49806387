"""The client and the agent loop against the scripted server imitating real servers' ways:
vLLM without a tool-call parser, llama.cpp without --jinja, reasoning fields and <think>
text, duplicate tool-call ids, no usage, replies cut at the length limit, a context limit."""

from __future__ import annotations

import pytest

from cligym.agents.client import ModelClient, ModelConfig, ModelToolsUnsupported
from cligym.agents.loop import CUT_OFF, AgentLimits, run_agent
from cligym.agents.tools import ToolExecutor
from cligym.agents.trajectory import TrajectoryRecorder, to_chat_messages
from cligym.invert.query import parse_query
from tests.llm_server import LLAMACPP_NO_JINJA, VLLM_NO_TOOL_PARSER, reply, tool_call

FINISH = reply(tool_calls=[tool_call("finish", {"summary": "done"})])


def _client(server, **settings) -> ModelClient:
    return ModelClient(ModelConfig(model="scripted", base_url=server.base_url,
                                   **{"max_retries": 3, "backoff_base": 0.01, **settings}))


@pytest.mark.parametrize("quirk, said", [({"tool_parser": False}, VLLM_NO_TOOL_PARSER),
                                         ({"jinja": False}, LLAMACPP_NO_JINJA)])
def test_preflight_names_the_flags_of_a_server_without_tool_calls(scripted_server, quirk, said):
    """One request, no retries (llama.cpp's 500 used to be retried for ~31 s), a fatal
    error with exit 2 that quotes the server and names the flags that enable tool calls."""
    server = scripted_server([reply("never")], **quirk)
    with pytest.raises(ModelToolsUnsupported) as caught:
        _client(server).preflight()
    text = str(caught.value)
    assert caught.value.fatal and caught.value.exit_code == 2 and server.answers == [("/v1/chat/completions",
                                                                                       quirk_status(quirk))]
    assert said in text and "--enable-auto-tool-choice --tool-call-parser" in text and "--jinja" in text
    assert server.remaining == 1  # the server refused before the script


def quirk_status(quirk: dict) -> int:
    return 400 if "tool_parser" in quirk else 500


def test_preflight_passes_on_a_server_with_tool_calls(scripted_server):
    server = scripted_server([reply("for the run")])
    assert _client(server).preflight().tool_calls[0].name == "ping"
    assert server.preflights == 1 and server.remaining == 1


@pytest.mark.parametrize("quirk", [{"tool_parser": False}, {"jinja": False}])
def test_an_llm_run_stops_at_once_on_a_server_without_tool_calls(scripted_server, tmp_path, quirk):
    """``cligym rollout`` (as ``invert --agent llm``): exit 2 with one line naming the flags,
    before anything else runs."""
    import subprocess
    import sys

    server = scripted_server([reply("never")], **quirk)
    done = subprocess.run([sys.executable, "-m", "cligym", "rollout", str(tmp_path), "-o", str(tmp_path / "r"),
                           "--model", "m", "--base-url", server.base_url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--enable-auto-tool-choice" in done.stderr and "--jinja" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and server.remaining == 1


def test_decoding_controls_are_in_the_request(scripted_server):
    server = scripted_server([reply("ok")])
    _client(server, temperature=0.0, max_tokens=256, seed=7, extra_body={"top_k": 1}).chat([{"role": "user",
                                                                                            "content": "hi"}])
    sent = server.requests[0]
    assert (sent["temperature"], sent["max_tokens"], sent["seed"], sent["top_k"]) == (0.0, 256, 7, 1)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_reasoning_field_is_kept_apart(scripted_server, field):
    server = scripted_server([reply("the answer", reasoning="first I think", reasoning_field=field)])
    answer = _client(server).chat([{"role": "user", "content": "q"}])
    assert (answer.content, answer.reasoning) == ("the answer", "first I think")


def test_think_text_is_reasoning_and_the_last_json_answer_wins(scripted_server):
    """A server without a reasoning parser leaves <think> in the content; a draft JSON
    object inside it must not be taken for the answer."""
    draft = '{"title": "draft", "category": "x", "selected_tests": ["t::a"], "description": "d"}'
    final = '{"title": "final", "category": "x", "selected_tests": ["t::a"], "description": "d"}'
    server = scripted_server([reply(f"<think>maybe {draft}</think>\nHere it is: {final}")])
    answer = _client(server).chat([{"role": "user", "content": "q"}])
    assert answer.reasoning.startswith("maybe") and "<think>" not in answer.content
    assert parse_query(answer.content, ["t::a"]).title == "final"
    assert parse_query(f"<think>{draft}</think>{final}", ["t::a"]).title == "final"


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
