"""The agent loop and its tools, driven by the real client against the scripted server,
executing in a real container."""

from __future__ import annotations

import time

import pytest

from cligym.agents.client import (
    ModelBroken,
    ModelClient,
    ModelConfig,
    ModelNotChatEndpoint,
    ModelUnreachable,
)
from cligym.agents.loop import AgentLimits, run_agent
from cligym.agents.tools import ToolExecutor
from tests.llm_server import error, hang, html_page, reply, tool_call, truncated


def _client(server, **settings) -> ModelClient:
    return ModelClient(ModelConfig(model="scripted", base_url=server.base_url,
                                   **{"max_retries": 2, "backoff_base": 0.01, **settings}))

BASH = reply(tool_calls=[tool_call("execute_bash", {"command": "true"})])


def test_tools_in_a_real_container(runtime, base_image, scripted_server):
    server = scripted_server([
        reply(tool_calls=[tool_call("execute_bash", {"command": "cd /tmp && export GREETING=hello && mkdir -p work"})]),
        reply(tool_calls=[tool_call("execute_bash", {"command": "pwd; echo $GREETING"})]),
        reply(tool_calls=[tool_call("str_replace_editor", {"command": "create", "path": "/tmp/work/a.txt",
                                                           "file_text": "one\ntwo\n"})]),
        reply(tool_calls=[tool_call("str_replace_editor", {"command": "str_replace", "path": "/tmp/work/a.txt",
                                                           "old_str": "two", "new_str": "2"})]),
        reply(tool_calls=[tool_call("str_replace_editor", {"command": "insert", "path": "/tmp/work/a.txt",
                                                           "insert_line": 0, "new_str": "zero"})]),
        reply(tool_calls=[tool_call("str_replace_editor", {"command": "view", "path": "/tmp/work/a.txt"})]),
        reply(tool_calls=[tool_call("execute_bash", '{"command": "echo broken json')]),  # malformed arguments
        reply(tool_calls=[tool_call("execute_bash", {"command": "seq 1 100000"})]),
        reply(tool_calls=[tool_call("execute_bash", {"command": "sleep 30", "timeout": 1})]),
        # longer than one argv string may be (128 KiB): still runs, with the state kept
        reply(tool_calls=[tool_call("execute_bash", {
            "command": "cat > big <<'EOF'\n" + "x" * 200_000 + "\nEOF\nwc -c < big; pwd"})]),
        reply(tool_calls=[tool_call("think", {"thought": "all good"})]),
        reply("done", tool_calls=[tool_call("finish", {"summary": "checked the tools"})]),
    ])
    with runtime.session(base_image) as session:
        executor = ToolExecutor(session, workdir="/", command_timeout=30, max_output=2000)
        outcome = run_agent(_client(server), executor, system="sys", task="task", limits=AgentLimits(max_steps=20))
        assert session.get_file("/tmp/work/a.txt") == b"zero\none\n2\n"
    assert outcome.finished and outcome.steps == 12 and outcome.summary == "checked the tools"
    tool_messages = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    observations = [m["content"] for m in tool_messages]
    assert observations[1].splitlines()[:2] == ["/tmp", "hello"]  # cwd and env persisted
    assert "1\tzero" in observations[5].replace(" ", "")
    assert observations[6].startswith("error:") and "JSON" in observations[6]
    assert "output cut" in observations[7] and len(observations[7]) < 3000
    assert "timed out" in observations[8]
    assert observations[9].split() == ["200001", "/tmp"]
    assert outcome.prompt_tokens > 0 and outcome.completion_tokens > 0


def test_model_that_never_finishes_stops_at_the_step_limit(runtime, base_image, scripted_server):
    server = scripted_server([reply(tool_calls=[tool_call("execute_bash", {"command": "true"})])] * 10)
    with runtime.session(base_image) as session:
        outcome = run_agent(_client(server), ToolExecutor(session), system="s", task="t",
                            limits=AgentLimits(max_steps=4))
    assert outcome.stop_reason == "max_steps" and outcome.steps == 4 and not outcome.finished


def test_unreachable_endpoint_is_raised(runtime, base_image):
    client = ModelClient(ModelConfig(model="m", base_url="http://127.0.0.1:9/v1", max_retries=0))
    with runtime.session(base_image) as session, pytest.raises(ModelUnreachable, match="cannot reach"):
        run_agent(client, ToolExecutor(session), system="s", task="t", limits=AgentLimits())


def test_a_refused_request_ends_the_run_as_model_error(runtime, base_image, scripted_server):
    server = scripted_server([reply(tool_calls=[tool_call("execute_bash", {"command": "true"})]),
                              error(400, "Invalid 'tools[0].function.name': string does not match pattern")])
    with runtime.session(base_image) as session:
        outcome = run_agent(_client(server), ToolExecutor(session), system="s", task="t", limits=AgentLimits())
    assert outcome.stop_reason == "model_error" and "does not match pattern" in outcome.error
    assert outcome.steps == 1 and outcome.prompt_tokens == 10


def test_a_context_overflow_is_condensed_then_stops_as_context_overflow(runtime, base_image, scripted_server):
    """The server finds the conversation too long: older outputs are shortened and it is
    asked once more; refused again, the run stops as context_overflow (not model_error)."""
    too_long = "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."
    server = scripted_server([reply(tool_calls=[tool_call("execute_bash", {"command": "seq 3000"})]),
                              error(400, too_long), error(400, too_long)])
    with runtime.session(base_image) as session:
        outcome = run_agent(_client(server), ToolExecutor(session), system="s", task="t", limits=AgentLimits())
    assert outcome.stop_reason == "context_overflow" and "longer than the model's context" in outcome.error
    assert outcome.steps == 1 and len(server.requests) == 3


@pytest.mark.parametrize("entry", [hang(), hang(trickle=0.1)])
def test_a_hanging_endpoint_ends_the_run_at_max_seconds(runtime, base_image, scripted_server, entry):
    """The model call waits no longer than the run has left, whatever the client's own
    timeout (300s here) and retries: the run stops at max_seconds."""
    server = scripted_server([BASH, entry])
    with runtime.session(base_image) as session:
        started = time.monotonic()
        outcome = run_agent(_client(server, timeout=300, max_retries=5), ToolExecutor(session), system="s",
                            task="t", limits=AgentLimits(max_seconds=3))
        elapsed = time.monotonic() - started
    assert outcome.stop_reason == "max_seconds" and outcome.steps == 1, outcome
    assert elapsed < 3 + 2, elapsed
    assert "within the time limit" in outcome.error and "\n" not in outcome.error


def test_garbage_mid_run_ends_it_as_model_error(runtime, base_image, scripted_server):
    server = scripted_server([BASH] + [truncated()] * 3)
    with runtime.session(base_image) as session:
        outcome = run_agent(_client(server), ToolExecutor(session), system="s", task="t", limits=AgentLimits())
    assert outcome.stop_reason == "model_error" and outcome.steps == 1
    assert "JSON cut off" in outcome.error and "not a chat completion (3 attempts)" in outcome.error


def test_garbage_run_after_run_is_raised(runtime, base_image, scripted_server):
    """Runs that each end in garbage: the third one in a row raises (the endpoint is broken)."""
    server = scripted_server([BASH] + [truncated()] * 10)
    client = _client(server, max_retries=0, max_failed_calls=3)
    with runtime.session(base_image) as session:
        reasons = [run_agent(client, ToolExecutor(session), system="s", task="t", limits=AgentLimits()).stop_reason
                   for _ in range(2)]
        with pytest.raises(ModelBroken, match="3 calls in a row"):
            run_agent(client, ToolExecutor(session), system="s", task="t", limits=AgentLimits())
    assert reasons == ["model_error", "model_error"]


def test_a_web_page_for_an_endpoint_is_raised(runtime, base_image, scripted_server):
    server = scripted_server([html_page("Open WebUI")])
    with runtime.session(base_image) as session, pytest.raises(ModelNotChatEndpoint, match="an HTML page"):
        run_agent(_client(server), ToolExecutor(session), system="s", task="t", limits=AgentLimits())
    assert len(server.requests) == 1


def test_an_engine_refusal_is_an_error_observation(runtime, base_image):
    with runtime.session(base_image) as session:
        text = ToolExecutor(session).run("str_replace_editor", {"command": "create", "path": "/etc/passwd/x",
                                                                 "file_text": "x"})
    assert text.startswith("error: str_replace_editor failed") and "not a directory" in text


def test_editor_create_refuses_existing_files_and_undo_edit_goes_back(runtime, base_image):
    with runtime.session(base_image) as session:
        tools = ToolExecutor(session)

        def edit(**args):
            return tools.run("str_replace_editor", args)

        assert edit(command="create", path="/tmp/e/a.txt", file_text="one\n") == "created /tmp/e/a.txt"
        assert "already exists" in edit(command="create", path="/tmp/e/a.txt", file_text="lost\n")
        assert "already exists" in edit(command="create", path="/etc/hostname", file_text="x")
        edit(command="str_replace", path="/tmp/e/a.txt", old_str="one", new_str="two")
        edit(command="insert", path="/tmp/e/a.txt", insert_line=0, new_str="zero")
        assert session.get_file("/tmp/e/a.txt") == b"zero\ntwo\n"
        assert edit(command="undo_edit", path="/tmp/e/a.txt").startswith("undid")
        assert session.get_file("/tmp/e/a.txt") == b"two\n"
        edit(command="undo_edit", path="/tmp/e/a.txt")
        assert session.get_file("/tmp/e/a.txt") == b"one\n"
        assert "removed" in edit(command="undo_edit", path="/tmp/e/a.txt")
        assert session.get_file("/tmp/e/a.txt") is None
        assert edit(command="undo_edit", path="/tmp/e/a.txt").startswith("error: no edit")
        session.exec(["sh", "-c", "mkdir -p /tmp/d/sub/deeper /tmp/d/.hidden && touch /tmp/d/f /tmp/d/.dot "
                                  "/tmp/d/sub/g /tmp/d/sub/deeper/h"])
        listed = edit(command="view", path="/tmp/d").split()
        assert listed == ["/tmp/d", "/tmp/d/f", "/tmp/d/sub", "/tmp/d/sub/deeper", "/tmp/d/sub/g"]
