"""The model client against a real (scripted) OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import email.utils
import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from cligym.agents.client import (
    ModelAuthError,
    ModelClient,
    ModelConfig,
    ModelError,
    ModelNotFound,
    ModelRetriesExhausted,
    ModelUnreachable,
)
from cligym.agents.answers import Usage
from cligym.agents.history import assistant_message
from cligym.errors import BadInput, CligymError
from tests.llm_server import EXHAUSTED, error, reply, tool_call

KEY = "sk-test-123"
TOOLS = [{"type": "function", "function": {"name": "execute_bash", "description": "run",
                                            "parameters": {"type": "object",
                                                           "properties": {"command": {"type": "string"}}}}}]
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "fix it"}]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("CLIGYM_API_KEY", KEY)


def make_client(server_or_url, **overrides) -> ModelClient:
    base_url = server_or_url if isinstance(server_or_url, str) else server_or_url.base_url
    settings = {"model": "test-model", "base_url": base_url, "timeout": 5, "max_retries": 3,
                "backoff_base": 0.01, "backoff_cap": 0.05, "retry_after_cap": 1.0, **overrides}
    return ModelClient(ModelConfig(**settings))


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert isinstance(exc, CligymError)
    assert text and "\n" not in text and len(text) < 400, text
    return text


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- replies


def test_plain_reply(scripted_server):
    server = scripted_server([reply("hello there", prompt_tokens=7, completion_tokens=3)], api_key=KEY)
    client = make_client(server, temperature=0.2)

    answer = client.chat(MESSAGES)

    assert answer.content == "hello there"
    assert answer.tool_calls == []
    assert answer.finish_reason == "stop"
    assert answer.usage == Usage(prompt_tokens=7, completion_tokens=3)
    assert assistant_message(answer) == {"role": "assistant", "content": "hello there"}
    [body] = server.requests
    assert body["model"] == "test-model" and body["messages"] == MESSAGES
    assert body["temperature"] == 0.2 and "tools" not in body
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    assert (client.calls, client.requests, client.retries) == (1, 1, 0)


def test_tool_calls_are_parsed(scripted_server):
    server = scripted_server([
        reply("let me look", [tool_call("execute_bash", {"command": "ls -la"}, id="call_a"),
                              ("str_replace_editor", {"command": "view", "path": "/app/x.py"})]),
    ])
    client = make_client(server)

    answer = client.chat(MESSAGES, tools=TOOLS)

    assert server.requests[0]["tools"] == TOOLS
    assert answer.content == "let me look" and answer.finish_reason == "tool_calls"
    first, second = answer.tool_calls
    assert (first.id, first.name, first.arguments, first.error) == (
        "call_a", "execute_bash", {"command": "ls -la"}, None)
    assert json.loads(first.raw_arguments) == {"command": "ls -la"}
    assert second.name == "str_replace_editor" and second.arguments == {"command": "view", "path": "/app/x.py"}
    assert second.id  # the server's id is kept
    message = assistant_message(answer)
    assert message["tool_calls"][0] == {"id": "call_a", "type": "function",
                                        "function": {"name": "execute_bash", "arguments": first.raw_arguments}}


def test_malformed_tool_arguments_are_an_error_not_an_exception(scripted_server):
    server = scripted_server([
        reply(None, [tool_call("execute_bash", '{"command": "ls'),   # cut off
                     tool_call("execute_bash", "[1, 2]"),            # JSON, not an object
                     tool_call("think", ""),                         # no arguments at all
                     tool_call("finish", '{"summary": "done"}')]),
    ])
    answer = make_client(server).chat(MESSAGES, tools=TOOLS)

    cut, array, empty, good = answer.tool_calls
    assert answer.content == ""
    assert cut.arguments is None and "not valid JSON" in cut.error and cut.raw_arguments == '{"command": "ls'
    assert array.arguments is None and "JSON object" in array.error and array.raw_arguments == "[1, 2]"
    assert empty.arguments == {} and empty.error is None
    assert good.arguments == {"summary": "done"} and good.error is None


def test_usage_is_read_per_call(scripted_server):
    server = scripted_server([reply("a", prompt_tokens=100, completion_tokens=10),
                              reply("b", prompt_tokens=150, completion_tokens=20),
                              reply(None, [tool_call("finish", {})], prompt_tokens=200, completion_tokens=5)])
    client = make_client(server)

    replies = [client.chat(MESSAGES) for _ in range(3)]

    assert [r.usage for r in replies] == [Usage(prompt_tokens=100, completion_tokens=10),
                                          Usage(prompt_tokens=150, completion_tokens=20),
                                          Usage(prompt_tokens=200, completion_tokens=5)]
    assert client.calls == 3 and len(server.requests) == 3
    # past the end of the script the server says so
    assert client.chat(MESSAGES).content == EXHAUSTED


def test_callable_entry_sees_the_conversation(scripted_server):
    def react(messages):
        observation = messages[-1]
        assert observation["role"] == "tool" and observation["tool_call_id"] == "call_1"
        return reply(f"the output was {observation['content']}")

    server = scripted_server([reply(None, [tool_call("execute_bash", {"command": "echo hi"}, id="call_1")]), react])
    client = make_client(server)
    first = client.chat(MESSAGES, tools=TOOLS)
    messages = MESSAGES + [assistant_message(first), {"role": "tool", "tool_call_id": "call_1", "content": "hi"}]

    assert client.chat(messages, tools=TOOLS).content == "the output was hi"
    assert server.requests[1]["messages"][2]["tool_calls"][0]["function"]["name"] == "execute_bash"


# --------------------------------------------------------------------------- retries


@pytest.mark.parametrize("retry_after", ["0.3", "1"])
def test_429_honours_retry_after(scripted_server, retry_after):
    server = scripted_server([error(429, "slow down", retry_after=retry_after), reply("ok")])
    client = make_client(server, backoff_base=0.001, retry_after_cap=0.6)

    started = time.monotonic()
    answer = client.chat(MESSAGES)
    waited = time.monotonic() - started

    assert answer.content == "ok"
    assert len(server.requests) == 2 and [status for _, status in server.answers] == [429, 200]
    assert (client.calls, client.requests, client.retries) == (1, 2, 1)
    expected = min(float(retry_after), 0.6)  # the header, capped
    assert expected - 0.05 <= waited < expected + 0.8


def test_retry_after_as_http_date_is_capped(scripted_server):
    later = email.utils.formatdate(time.time() + 3600, usegmt=True)
    server = scripted_server([error(429, retry_after=later), reply("ok")])
    started = time.monotonic()
    assert make_client(server, retry_after_cap=0.2).chat(MESSAGES).content == "ok"
    assert 0.15 <= time.monotonic() - started < 1.5
    assert len(server.requests) == 2


def test_server_errors_are_retried_then_succeed(scripted_server):
    server = scripted_server([error(500, "boom"), error(503), error(502), reply("finally")])
    client = make_client(server)

    assert client.chat(MESSAGES).content == "finally"
    assert len(server.requests) == 4
    assert (client.requests, client.retries) == (4, 3)
    assert all(body == server.requests[0] for body in server.requests)  # the same request each time


def test_retries_exhausted_is_one_line(scripted_server):
    server = scripted_server([error(500, "the GPU\nfell over")] * 5)
    client = make_client(server, max_retries=2)

    with pytest.raises(ModelRetriesExhausted) as caught:
        client.chat(MESSAGES)

    text = one_line(caught.value)
    assert "retries exhausted" in text and "3 attempts" in text and server.base_url in text
    assert "HTTP 500" in text and "the GPU fell over" in text
    assert len(server.requests) == 3  # the first attempt and 2 retries: the SDK retried nothing itself
    assert client.calls == 0


def test_no_retries_when_max_retries_is_zero(scripted_server):
    server = scripted_server([error(429, retry_after="0"), reply("never")])
    with pytest.raises(ModelRetriesExhausted, match="1 attempt,"):
        make_client(server, max_retries=0).chat(MESSAGES)
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- errors


def test_wrong_key_is_refused(scripted_server, monkeypatch):
    server = scripted_server([reply("never")], api_key="the-right-key")
    monkeypatch.setenv("CLIGYM_API_KEY", "a-wrong-key")

    with pytest.raises(ModelAuthError) as caught:
        make_client(server).chat(MESSAGES)

    text = one_line(caught.value)
    assert text.startswith("the model endpoint refused the API key (set $CLIGYM_API_KEY)")
    assert "a-wrong-key" not in text
    assert len(server.requests) == 1  # not retried
    assert server.remaining == 1  # the refused request consumed nothing


def test_unset_key_variable_sends_empty_and_says_so(scripted_server, monkeypatch):
    server = scripted_server([error(403, "forbidden")])
    monkeypatch.delenv("MY_LLM_KEY", raising=False)

    with pytest.raises(ModelAuthError) as caught:
        make_client(server, api_key_env="MY_LLM_KEY").chat(MESSAGES)

    assert "(set $MY_LLM_KEY; it is not set now)" in one_line(caught.value)
    assert server.headers[0]["authorization"] == "Bearer EMPTY"


def test_a_server_without_keys_accepts_the_empty_key(scripted_server, monkeypatch):
    monkeypatch.delenv("CLIGYM_API_KEY")
    server = scripted_server([reply("ok")])
    assert make_client(server).chat(MESSAGES).content == "ok"
    assert server.headers[0]["authorization"] == "Bearer EMPTY"


def test_unknown_model_and_wrong_path_are_not_found(scripted_server):
    server = scripted_server([error(404, "The model `nope` does not exist.")])
    with pytest.raises(ModelNotFound) as caught:
        make_client(server, model="nope").chat(MESSAGES)
    text = one_line(caught.value)
    assert "'nope'" in text and "does not exist" in text and len(server.requests) == 1

    wrong_path = server.base_url.removesuffix("/v1") + "/api"  # no chat/completions route there
    with pytest.raises(ModelNotFound):
        make_client(wrong_path).chat(MESSAGES)


def test_bad_request_is_not_retried(scripted_server):
    server = scripted_server([error(400, "'messages' must not be empty"), reply("never")])
    client = make_client(server)
    with pytest.raises(ModelError) as caught:
        client.chat(MESSAGES)
    text = one_line(caught.value)
    assert "rejected the request" in text and "HTTP 400" in text and "must not be empty" in text
    assert len(server.requests) == 1


def test_unreachable_endpoint(monkeypatch):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    client = make_client(url, max_retries=2)

    with pytest.raises(ModelUnreachable) as caught:
        client.chat(MESSAGES)

    text = one_line(caught.value)
    assert text.startswith(f"cannot reach the model endpoint at {url}: ")
    assert "3 attempts" in text
    assert (client.requests, client.retries, client.calls) == (3, 2, 0)


def test_slow_reply_times_out_and_is_retried(scripted_server):
    server = scripted_server([reply("too late", delay=3), reply("in time")])
    client = make_client(server, timeout=0.5)

    started = time.monotonic()
    assert client.chat(MESSAGES).content == "in time"
    assert time.monotonic() - started < 2.5
    assert len(server.requests) == 2 and client.retries == 1


def test_slow_replies_exhaust_the_retries(scripted_server):
    server = scripted_server([reply("too late", delay=3)] * 3)
    client = make_client(server, timeout=0.4, max_retries=1)

    started = time.monotonic()
    with pytest.raises(ModelRetriesExhausted) as caught:
        client.chat(MESSAGES)

    assert "no answer within 0.4s" in one_line(caught.value)
    assert time.monotonic() - started < 2.5
    assert len(server.requests) == 2


# --------------------------------------------------------------------------- config


def test_config_file_and_overrides(tmp_path, scripted_server, monkeypatch):
    server = scripted_server([reply("from the file")], api_key="file-key")
    monkeypatch.setenv("FILE_KEY_VAR", "file-key")
    path = tmp_path / "model.toml"
    path.write_text(f'model = "test-model"\nbase_url = "{server.base_url}"\napi_key_env = "FILE_KEY_VAR"\n'
                    "timeout = 7.5\nmax_retries = 1\ntemperature = 0.7\nbackoff_base = 0.01\n")

    config = ModelConfig.load(path)
    assert (config.model, config.base_url, config.api_key_env) == ("test-model", server.base_url, "FILE_KEY_VAR")
    assert (config.timeout, config.max_retries, config.temperature) == (7.5, 1, 0.7)

    overridden = ModelConfig.load(path, model="other-model", base_url=None, temperature=0.0)
    assert overridden.model == "other-model" and overridden.base_url == server.base_url  # None keeps the file's
    assert overridden.temperature == 0.0 and overridden.timeout == 7.5

    assert ModelClient(config).chat(MESSAGES).content == "from the file"
    assert server.requests[0]["temperature"] == 0.7
    assert server.headers[0]["authorization"] == "Bearer file-key"


def test_config_defaults():
    config = ModelConfig(model="m", base_url="http://127.0.0.1:1/v1")
    assert config.api_key_env == "CLIGYM_API_KEY" and config.temperature == 0.0  # the paper decodes greedily
    assert config.max_tokens is None and config.seed is None and config.extra_body == {}
    assert config.max_retries >= 1 and config.timeout > 0


@pytest.mark.parametrize("text, expected", [
    ('model = "m"\nbase_urll = "http://x"\n', "base_urll"),   # a typo is not silently ignored
    ('model = "m"\ntimeout = "soon"\n', "timeout"),
    ("model = \n", "not valid TOML"),
])
def test_bad_config_file_is_one_line(tmp_path, text, expected):
    path = tmp_path / "model.toml"
    path.write_text(text)
    with pytest.raises(BadInput) as caught:
        ModelConfig.load(path)
    line = one_line(caught.value)
    assert line.startswith(f"model config {path}: ") and expected in line


def test_missing_config_file(tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        ModelConfig.load(tmp_path / "absent.toml")


def test_client_needs_model_and_url():
    with pytest.raises(BadInput):
        ModelClient(ModelConfig(model="m"))


# --------------------------------------------------------------------------- the server itself


def test_server_rejects_requests_without_model_or_messages(scripted_server):
    server = scripted_server([reply("kept")])
    request = urllib.request.Request(server.base_url + "/chat/completions", data=b'{"messages": []}',
                                     headers={"Content-Type": "application/json"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    caught.value.close()
    assert caught.value.code == 400
    assert server.requests == [{"messages": []}] and server.remaining == 1
