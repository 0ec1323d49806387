"""Answers that are not chat completions (web pages, text, invalid, cut-off or misshapen
JSON, dropped connections), through the real client against the scripted server on
127.0.0.1: one line each, fatal when the endpoint is not a chat API at all, per request
otherwise, and fatal again when they keep coming."""

from __future__ import annotations

import json

import pytest

from cligym.agents import client as client_module
from cligym.agents.answers import Failed, read_completion
from cligym.agents.client import (
    ModelBadAnswer,
    ModelBroken,
    ModelError,
    ModelNotChatEndpoint,
    ModelNotFound,
    ModelRetriesExhausted,
)
from tests.llm_server import (
    completion_body,
    dropped,
    error,
    html_page,
    raw,
    reply,
    truncated,
)
from tests.unit.test_client import MESSAGES, make_client, one_line

#: (scripted answer, words the error line must contain): none of them is a chat completion
GARBAGE = {
    "html": (html_page("Open WebUI"), ["an HTML page ('Open WebUI')"]),
    "html-as-json": (raw("<html><head><title>Sign in</title></head></html>"), ["an HTML page ('Sign in')"]),
    "invalid-json": (raw('{"id": "x", choices: []}'), ["invalid JSON", "position 12"]),
    "text": (raw("upstream connect error", content_type="text/plain"), ["text that is not JSON (text/plain)",
                                                                          "upstream connect error"]),
    "truncated": (truncated("a long answer " * 20, keep=0.6), ["JSON cut off after", "a long answer"]),
    "empty": (raw(b""), ["an empty body"]),
    "no-choices": (raw({"id": "x", "object": "chat.completion"}), ["JSON without choices (keys: id, object)"]),
    "empty-choices": (raw({"id": "x", "choices": []}), ["JSON with no choices (choices: [])"]),
    "null-message": (raw({"choices": [{"index": 0, "message": None}]}), ["first choice has no message"]),
    "list": (raw([1, 2]), ["not an object but a list"]),
    "not-utf8": (raw(b"\xff\xfe\x00\x01junk"), ["not UTF-8 text"]),
    "event-stream": (raw(b'data: {"choices": []}\n\n', content_type="text/event-stream"), ["an event stream"]),
}


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("CLIGYM_API_KEY", "sk-test")


@pytest.mark.parametrize("name", list(GARBAGE))
def test_garbage_from_a_new_endpoint_is_fatal(scripted_server, name):
    """An endpoint that has never given a completion and answers garbage is not a chat API:
    the run stops with one line and exit code 2. A web page is known at once; anything else
    after the retries (it might have been a glitch)."""
    answer, words = GARBAGE[name]
    server = scripted_server([answer] * 5)
    client = make_client(server, max_retries=2)

    with pytest.raises(ModelNotChatEndpoint) as caught:
        client.chat(MESSAGES)

    text = one_line(caught.value)
    assert caught.value.fatal and caught.value.exit_code == 2
    assert text.startswith(f"the model endpoint at {server.base_url} answered with "), text
    assert "not a chat completion" in text and "OpenAI-compatible" in text
    for word in words:
        assert word in text, text
    html = name.startswith("html")
    assert len(server.requests) == (1 if html else 3)
    assert client.calls == 0


@pytest.mark.parametrize("name", list(GARBAGE))
def test_garbage_after_a_completion_is_per_request(scripted_server, name):
    answer, words = GARBAGE[name]
    server = scripted_server([reply("first"), answer, answer, reply("recovered")])
    client = make_client(server, max_retries=1)
    assert client.chat(MESSAGES).content == "first"

    with pytest.raises(ModelBadAnswer) as caught:
        client.chat(MESSAGES)

    text = one_line(caught.value)
    assert not caught.value.fatal and not isinstance(caught.value, ModelNotChatEndpoint)
    assert "not a chat completion (2 attempts)" in text and all(word in text for word in words), text
    assert client.chat(MESSAGES).content == "recovered"
    assert client.failures == []


@pytest.mark.parametrize("answer", [truncated(), raw("{oops"), html_page("Bad Gateway"), dropped(),
                                    raw({"choices": []})])
def test_one_bad_answer_is_retried(scripted_server, answer):
    server = scripted_server([reply("first"), answer, reply("ok")])
    client = make_client(server)
    client.chat(MESSAGES)
    assert client.chat(MESSAGES).content == "ok"
    assert (client.calls, client.requests, client.retries) == (2, 3, 1)


def test_garbage_again_and_again_stops_the_run(scripted_server):
    """Garbage on call after call: the first ones are per-request errors (an agent run ends
    with model_error), then the endpoint counts as broken, a fatal error: no run can burn
    every attempt with exit 0."""
    server = scripted_server([reply("fine")] + [truncated()] * 20)
    client = make_client(server, max_retries=1, max_failed_calls=3)
    client.chat(MESSAGES)

    for _ in range(2):
        with pytest.raises(ModelBadAnswer) as caught:
            client.chat(MESSAGES)
        assert not caught.value.fatal
    with pytest.raises(ModelBroken) as caught:
        client.chat(MESSAGES)

    text = one_line(caught.value)
    assert caught.value.fatal and caught.value.exit_code == 1
    assert "JSON cut off" in text and "3 calls in a row without a completion" in text
    assert len(server.requests) == 1 + 3 * 2


def test_a_completion_resets_the_count(scripted_server):
    bad = raw({"choices": []})
    server = scripted_server([reply("a"), bad, reply("b"), bad, reply("c"), bad, reply("d")])
    client = make_client(server, max_retries=0, max_failed_calls=2)
    outcomes = []
    for _ in range(7):
        try:
            outcomes.append(client.chat(MESSAGES).content)
        except ModelError as exc:
            assert not exc.fatal
            outcomes.append("error")
    assert outcomes == ["a", "error", "b", "error", "c", "error", "d"]


def test_refusals_in_a_row_stop_the_run_too(scripted_server):
    """A request the server refuses every time (e.g. tools not enabled on a vLLM server) ends
    each agent run at once; in a row, they stop the whole run."""
    server = scripted_server([error(400, '"auto" tool choice requires --enable-auto-tool-choice')] * 3)
    client = make_client(server, max_failed_calls=3)
    for _ in range(2):
        with pytest.raises(ModelError) as caught:
            client.chat(MESSAGES)
        assert not caught.value.fatal
    with pytest.raises(ModelBroken) as caught:
        client.chat(MESSAGES)
    assert "HTTP 400" in one_line(caught.value) and "enable-auto-tool-choice" in str(caught.value)


def test_error_object_with_status_200_is_per_request(scripted_server):
    """Some proxies send an error object with status 200: the server speaks the API, so it is
    a per-request error naming the server's message, even before any completion."""
    server = scripted_server([raw({"error": {"message": "prompt is too long", "code": 400}})] * 2)
    with pytest.raises(ModelBadAnswer) as caught:
        make_client(server, max_retries=1).chat(MESSAGES)
    assert not caught.value.fatal
    assert "an error object: 'prompt is too long'" in one_line(caught.value)


def test_a_proxy_error_page_is_named_by_its_title(scripted_server):
    server = scripted_server([html_page("502 Bad Gateway", status=502)] * 3)
    with pytest.raises(ModelRetriesExhausted) as caught:
        make_client(server, max_retries=2).chat(MESSAGES)
    text = one_line(caught.value)
    assert "HTTP 502 (an HTML page ('502 Bad Gateway'))" in text and "<" not in text
    assert len(server.requests) == 3

    server = scripted_server([html_page("404 Not Found", status=404)])
    with pytest.raises(ModelNotFound) as caught:
        make_client(server).chat(MESSAGES)
    assert "[HTTP 404: an HTML page ('404 Not Found')]" in one_line(caught.value)


def test_a_dropped_connection_is_retried_then_exhausted(scripted_server):
    server = scripted_server([dropped()] * 3)
    client = make_client(server, max_retries=2)
    with pytest.raises(ModelRetriesExhausted) as caught:
        client.chat(MESSAGES)
    text = one_line(caught.value)
    assert "the connection broke after" in text and "3 attempts" in text
    assert "cannot reach" not in text  # it was reached


def test_an_endless_answer_is_cut(scripted_server, monkeypatch):
    monkeypatch.setattr(client_module, "MAX_BODY", 2**20)
    server = scripted_server([reply("ok"), raw(b" " * (3 * 2**20) + completion_body())])
    client = make_client(server, max_retries=0)
    client.chat(MESSAGES)
    with pytest.raises(ModelBadAnswer, match="an answer larger than 1 MiB"):
        client.chat(MESSAGES)


# --------------------------------------------------------------------------- what real servers send


def test_lenient_about_harmless_differences(scripted_server):
    """Leading keep-alive whitespace, a wrong content type on a good body, content as parts,
    no usage, tool_calls null, arguments as an object, custom tool calls: all read."""
    body = json.loads(completion_body("unused"))
    message = body["choices"][0]["message"]
    message["content"] = [{"type": "text", "text": "part one, "}, {"type": "image"}, {"type": "text", "text": "two"}]
    message["tool_calls"] = [
        {"type": "function", "function": {"name": "execute_bash", "arguments": {"command": "ls"}}},
        {"id": "c2", "type": "custom", "custom": {"name": "apply_patch", "input": "*** patch"}},
    ]
    del body["usage"]
    server = scripted_server([
        raw(b"\n   \n" + json.dumps(body).encode(), content_type="text/plain"),
        raw({"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": None}}],
             "usage": {"prompt_tokens": "12", "completion_tokens": None}}),
    ])
    client = make_client(server)

    first = client.chat(MESSAGES)
    # no usage: estimated from the text (and flagged), so token limits still work
    assert first.content == "part one, two" and first.usage_estimated and first.usage.completion_tokens >= 3
    bash, custom = first.tool_calls
    assert (bash.id, bash.name, bash.arguments) == ("call_0_0", "execute_bash", {"command": "ls"})
    assert (custom.id, custom.name, custom.raw_arguments) == ("c2", "apply_patch", "*** patch")
    assert custom.error  # not a JSON object: reported to the model, not raised
    second = client.chat(MESSAGES)
    assert second.content == "" and second.tool_calls == [] and second.finish_reason is None


@pytest.mark.parametrize("body, content_type, kind, words", [
    (b"<!DOCTYPE html><html><title>A &amp; B</title></html>", "text/html", "html", "an HTML page ('A & B')"),
    (b"<html><body><h1>Gateway\n Timeout</h1></body></html>", "", "html", "an HTML page ('Gateway Timeout')"),
    (b'{"a": [1, 2', "application/json", "garbage", "JSON cut off after 11 bytes: '...{\"a\": [1, 2'"),
    (b'{"error": "overloaded"}', "application/json", "error", "an error object: 'overloaded'"),
    (b'"just a string"', "application/json", "garbage", "not an object but a string"),
    (b'{"choices": [{"message": {"content": 42}}]}', "application/json", "garbage", "message content is a number"),
    (b'{"choices": [{"message": {"tool_calls": ["x"]}}]}', "application/json", "garbage",
     "a tool call that is a string"),
    (b"[" * 100_000, "application/json", "garbage", "JSON"),
])
def test_read_completion_describes_what_came(body, content_type, kind, words):
    with pytest.raises(Failed) as caught:
        read_completion(body, content_type)
    assert caught.value.kind == kind and words in caught.value.reason
    assert "\n" not in caught.value.reason and len(caught.value.reason) < 200


def test_read_completion_reads_a_completion():
    answer = read_completion(completion_body("hello"), "application/json; charset=utf-8")
    assert answer.content == "hello" and answer.finish_reason == "stop"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (10, 5)
