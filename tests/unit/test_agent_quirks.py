"""The agent loop against the scripted server imitating real servers: what goes back to the
model (reasoning, extras, malformed arguments, role order), tool calls written as text,
sampling across episodes, the context budget and the command deadline. The tools run in
no container here: a stand-in executor answers every command (the loop's handling of the
conversation is under test; the engine tier runs the same loop in real containers)."""

from __future__ import annotations

import time

import pytest

from cligym.agents.client import ModelClient, ModelConfig
from cligym.agents.loop import MAX_FORMAT_ERRORS, AgentLimits, run_agent
from cligym.agents.tools import ToolExecutor, tool_definitions
from cligym.agents.trajectory import TrajectoryRecorder, to_chat_messages
from tests.llm_server import reply, sampled, tool_call


class AnsweringExecutor(ToolExecutor):
    """The tool executor with every shell command answered from memory (no container)."""

    def __init__(self, output: str = "ok", **settings) -> None:
        super().__init__(session=None, **settings)  # type: ignore[arg-type]
        self.output, self.commands = output, []

    def bash(self, command: str, timeout=None) -> str:
        self.commands.append(command)
        return self.output


def _run(server, *, limits=None, recorder=None, executor=None, episode=0, **settings):
    client = ModelClient(ModelConfig(model="scripted", base_url=server.base_url,
                                     **{"max_retries": 1, "backoff_base": 0.01, **settings}))
    return run_agent(client, executor or AnsweringExecutor(), system="sys", task="fix it",
                     limits=limits or AgentLimits(max_steps=8, max_seconds=60), recorder=recorder, episode=episode)


BASH = tool_call("execute_bash", {"command": "ls"})
FINISH = tool_call("finish", {"summary": "done"})


# --- 1. reasoning goes back to the APIs that need it


@pytest.mark.parametrize("thinking", ["deepseek", "kimi", "gemini"])
def test_thinking_apis_get_their_reasoning_back(scripted_server, thinking):
    """DeepSeek's and Kimi's thinking modes refuse a history whose tool-call turns lack their
    reasoning_content; Gemini one whose first call lacks its thought signature."""
    server = scripted_server([reply("looking", [BASH], reasoning="I should list"), reply(None, [FINISH])],
                             thinking=thinking)
    outcome = _run(server)
    assert outcome.stop_reason == "finished", outcome.error
    sent = server.requests[1]["messages"][2]
    assert sent["reasoning_content" if thinking != "gemini" else "tool_calls"]


def test_vllm_gets_reasoning_back_in_the_field_it_sent():
    """vLLM's gpt-oss reads the earlier turns' analysis from ``reasoning``."""
    from tests.llm_server import ScriptedServer

    with ScriptedServer([reply("a", [BASH], reasoning="plan", reasoning_field="reasoning"), reply(None, [FINISH])]) \
            as server:
        assert _run(server).finished
        assert server.requests[1]["messages"][2]["reasoning"] == "plan"


def test_drop_sends_no_reasoning_and_the_sft_rows_follow(scripted_server):
    server = scripted_server([reply("a", [BASH], reasoning="one"), reply("b", [BASH], reasoning="two"),
                              reply(None, [FINISH], reasoning="three")])
    recorder = TrajectoryRecorder("cligym-llm", "0", "scripted")
    assert _run(server, recorder=recorder, reasoning="drop").finished
    assert all("reasoning_content" not in m for r in server.requests for m in r["messages"])
    rows = [m for m in to_chat_messages(recorder.finish()) if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in rows] == [None, None, "three"]


# --- 2. tool calls written as text


def test_tool_calls_as_text_stop_the_run_saying_why(scripted_server):
    server = scripted_server([reply("<tool_call>\n{\"name\": \"execute_bash\", \"arguments\": {\"command\": "
                                    "\"ls\"}}\n</tool_call>")] * 10)
    outcome = _run(server)
    assert outcome.stop_reason == "format_error" and outcome.steps == MAX_FORMAT_ERRORS
    assert "arrived as text" in outcome.error and "<tool_call>" in outcome.error
    assert "arrived as text and was not run" in server.requests[1]["messages"][-1]["content"]


def test_a_usable_call_resets_the_format_count(scripted_server):
    script = [reply("thinking aloud"), reply("more"), reply(None, [BASH])] * 2 + [reply(None, [FINISH])]
    assert _run(server := scripted_server(script), limits=AgentLimits(max_steps=10, max_seconds=60)).finished
    assert server.remaining == 0


# --- 3. malformed arguments: the model may correct itself


def test_malformed_arguments_do_not_poison_the_history(scripted_server):
    """SGLang parses the history's arguments and refuses the request if one is no JSON."""
    bad = tool_call("execute_bash", '{"command": "ls"', id="bad_1")
    server = scripted_server([reply(None, [bad]), reply(None, [BASH]), reply(None, [FINISH])], strict_history=True)
    executor = AnsweringExecutor()
    outcome = _run(server, executor=executor)
    assert outcome.finished, outcome.error
    history = server.requests[1]["messages"]
    assert history[2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert "was not run" in history[3]["content"] and '{\\"command\\": \\"ls\\"' in history[3]["content"]
    assert executor.commands == ["ls"]


# --- 5. k episodes differ at temperature > 0; a seed makes them reproducible


def _trajectories(server_factory, episodes, **settings):
    found = []
    for episode in episodes:
        script = [sampled(*[reply(f"try {i}", [tool_call("execute_bash", {"command": f"echo {i}"})])
                            for i in range(100)]) for _ in range(3)] + [reply(None, [FINISH])]
        server = server_factory(script)
        recorder = TrajectoryRecorder("cligym-llm", "0", "scripted")
        _run(server, recorder=recorder, episode=episode, **settings)
        found.append(tuple(m.get("content") for m in to_chat_messages(recorder.finish())))
    return found


def test_episodes_sample_differently_and_a_seed_reproduces_them(scripted_server):
    unseeded = _trajectories(scripted_server, range(4), temperature=0.8)
    assert len(set(unseeded)) == 4
    seeded = _trajectories(scripted_server, range(4), temperature=0.8, seed=11)
    assert len(set(seeded)) == 4 and _trajectories(scripted_server, range(4), temperature=0.8, seed=11) == seeded
    assert len(set(_trajectories(scripted_server, range(4)))) == 1  # temperature 0: copies


# --- 6. the context budget is the model config's


def test_the_context_budget_comes_from_the_model_config(scripted_server):
    server = scripted_server([reply(None, [BASH]), reply(None, [BASH]), reply(None, [FINISH])], context_limit=900)
    recorder = TrajectoryRecorder("cligym-llm", "0", "scripted")
    outcome = _run(server, executor=AnsweringExecutor("x" * 3000), recorder=recorder, context_tokens=600)
    assert outcome.finished, outcome.error
    assert all(status == 200 for _, status in server.answers)  # shortened before sending, never refused
    marked = [r for s in recorder.finish().steps if s.observation for r in s.observation.results if r.extra]
    assert marked and marked[0].extra["condensed"]["kept_chars"] == 200


# --- 7. no command outlives the attempt; the tool says its default timeout


class _Shell:
    def __init__(self) -> None:
        self.timeouts: list[int] = []

    def run(self, command: str, seconds: int) -> str:
        self.timeouts.append(seconds)
        return "ok"


def test_a_command_timeout_is_cut_to_the_time_left():
    executor = ToolExecutor(session=None, command_timeout=90)  # type: ignore[arg-type]
    executor.shell = shell = _Shell()
    executor.bash("sleep 1000", timeout=3600)
    executor.deadline = time.monotonic() + 5
    executor.bash("sleep 1000", timeout=3600)
    executor.deadline = time.monotonic() - 1
    assert "no time is left" in executor.bash("true")
    assert shell.timeouts[0] == 3600 and shell.timeouts[1] <= 5
    described = tool_definitions(90)[0]["function"]
    assert "90 s unless you give one" in described["description"]
    assert "default 90" in described["parameters"]["properties"]["timeout"]["description"]


# --- 9. role order: no user message right after tool results


def test_a_note_after_tool_results_reaches_mistral(scripted_server):
    """A reply cut at the token limit after a tool call gets a note: Mistral refuses a user
    turn right after a tool turn, so the note is joined to the tool result."""
    server = scripted_server([reply(None, [BASH], finish_reason="length"), reply(None, [FINISH])],
                             role_order="mistral")
    recorder = TrajectoryRecorder("cligym-llm", "0", "scripted")
    outcome = _run(server, recorder=recorder)
    assert outcome.finished, outcome.error
    last = server.requests[1]["messages"][-1]
    assert last["role"] == "tool" and "cut off at the completion-token limit" in last["content"]
    assert [s.source for s in recorder.finish().steps][-2] == "user"  # the trajectory keeps the note as said


def test_a_history_that_goes_on_after_tool_results_reaches_mistral(scripted_server):
    """Invert's last turn: a filled history goes on with a user message."""
    server = scripted_server([reply(None, [BASH]), reply(None, [FINISH]), reply(None, [FINISH])],
                             role_order="mistral")
    history: list = []
    assert _run_with_history(server, history, "first").finished
    assert _run_with_history(server, history, "one more thing").finished


def _run_with_history(server, history, task):
    client = ModelClient(ModelConfig(model="scripted", base_url=server.base_url, max_retries=0))
    return run_agent(client, AnsweringExecutor(), system="sys", task=task,
                     limits=AgentLimits(max_steps=4, max_seconds=30), history=history)


# --- 11. cached tokens reach the trajectory


def test_cached_tokens_reach_the_trajectory(scripted_server):
    server = scripted_server([reply(None, [BASH], cached_tokens=6), reply(None, [FINISH], cached_tokens=4)])
    recorder = TrajectoryRecorder("cligym-llm", "0", "scripted")
    assert _run(server, recorder=recorder).finished
    trajectory = recorder.finish()
    assert trajectory.final_metrics.total_cached_tokens == 10
    assert trajectory.agent.tool_definitions and trajectory.agent.extra["reasoning_history"] == "send-back"
