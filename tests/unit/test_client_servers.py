"""The client against the scripted server imitating real servers' ways: vLLM without a
tool-call parser, llama.cpp without --jinja, decoding controls, reasoning fields and
<think> text."""

from __future__ import annotations

import pytest

from cligym.agents.client import ModelClient, ModelConfig, ModelToolsUnsupported
from cligym.invert.query import parse_query
from tests.llm_server import LLAMACPP_NO_JINJA, VLLM_NO_TOOL_PARSER, reply


def _client(server, **settings) -> ModelClient:
    return ModelClient(ModelConfig(model="scripted", base_url=server.base_url,
                                   **{"max_retries": 3, "backoff_base": 0.01, **settings}))


def quirk_status(quirk: dict) -> int:
    return 400 if "tool_parser" in quirk else 500


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
