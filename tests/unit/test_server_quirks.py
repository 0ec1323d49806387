"""The model client against the scripted server imitating the servers people use: their
exact status codes and messages (``tests/llm_quirks.py``), one test per behaviour."""

from __future__ import annotations

import threading
import time

import pytest

from cligym.agents.client import (
    ModelBroken,
    ModelClient,
    ModelConfig,
    ModelContextOverflow,
    ModelError,
    ModelFieldRefused,
    ModelToolsUnsupported,
)
from tests.llm_server import error, reply, tool_call

MESSAGES = [{"role": "user", "content": "q"}]


def _client(server, **settings) -> ModelClient:
    return ModelClient(ModelConfig(model="scripted", base_url=server.base_url,
                                   **{"max_retries": 2, "backoff_base": 0.01, **settings}))


# --- 2. tool calls that come back as text


def test_a_server_that_writes_tool_calls_as_text_fails_the_preflight(scripted_server):
    """SGLang without --tool-call-parser puts <tool_call> text in the content: the run
    stops before its first attempt, saying so and naming the flag."""
    server = scripted_server([], tool_parser="text")
    with pytest.raises(ModelToolsUnsupported) as caught:
        _client(server).preflight()
    text = str(caught.value)
    assert "as text" in text and "<tool_call>" in text and "--tool-call-parser" in text
    assert caught.value.fatal and caught.value.exit_code == 2


# --- 4. temperature and the completion limit of OpenAI's reasoning models


def test_a_refused_temperature_names_the_config_key(scripted_server):
    server = scripted_server([], reasoning_model=True)
    with pytest.raises(ModelFieldRefused) as caught:
        _client(server).preflight()
    text = str(caught.value)
    assert "'temperature'" in text and 'omit = ["temperature"]' in text and "does not support 0.0 with" in text
    assert caught.value.fatal and caught.value.exit_code == 2 and len(server.answers) == 1  # no retries


def test_a_refused_max_tokens_names_the_field_to_use(scripted_server):
    server = scripted_server([], reasoning_model=True)
    with pytest.raises(ModelFieldRefused, match='max_tokens_field = "max_completion_tokens"'):
        _client(server, temperature=None, max_tokens=512).preflight()


def test_the_openai_reasoning_preset_is_taken(scripted_server):
    server = scripted_server([reply("fine")], reasoning_model=True)
    client = _client(server, preset="openai-reasoning", max_tokens=512)
    client.preflight()
    assert client.chat(MESSAGES).content == "fine"
    sent = server.requests[0]
    assert "temperature" not in sent and "max_tokens" not in sent and sent["max_completion_tokens"] == 512


def test_a_config_file_sets_the_profile_and_its_keys_win(tmp_path):
    path = tmp_path / "model.toml"
    path.write_text('preset = "openai-reasoning"\nmodel = "o4"\nbase_url = "http://127.0.0.1:1/v1"\n'
                    'reasoning = "send-back"\ncontext_tokens = 4000\n')
    config = ModelConfig.load(path)
    assert (config.omit, config.max_tokens_field, config.reasoning, config.context_tokens) == (
        ["temperature"], "max_completion_tokens", "send-back", 4000)
    with pytest.raises(Exception, match="unknown preset 'nope'"):
        ModelConfig(model="m", base_url="u", preset="nope")


# --- 5. episodes sample differently; a seed makes them reproducible


def test_the_seed_moves_with_the_episode(scripted_server):
    server = scripted_server(["a", "b", "c"])
    client = _client(server, temperature=0.7, seed=7)
    for episode in (0, 1, 1):
        client.chat(MESSAGES, episode=episode)
    assert [r["seed"] for r in server.requests] == [7, 8, 8]
    assert "seed" not in _client(server, temperature=0.7).request(MESSAGES, episode=3)


# --- 6. context overflow in each server's words


@pytest.mark.parametrize("style", ["vllm", "sglang", "together", "llamacpp", "gemini"])
def test_context_overflow_is_recognised(scripted_server, style):
    server = scripted_server([reply("never")], context_limit=10, context_style=style)
    with pytest.raises(ModelContextOverflow, match="longer than the model's context"):
        _client(server).chat([{"role": "user", "content": "x" * 400}])
    assert len(server.answers) == 1


# --- 8. concurrency: one worker's failures are its own; back-off with jitter


def test_failures_of_different_workers_do_not_add_up(scripted_server):
    """Three workers each get one refusal of their own conversation: no run-wide stop."""
    server = scripted_server([error(400, "bad request for this conversation")] * 3 + ["ok"] * 3)
    client = _client(server)
    barrier = threading.Barrier(3)
    raised: list[BaseException] = []

    def worker() -> None:
        barrier.wait()
        try:
            client.chat(MESSAGES)
        except ModelError as exc:
            raised.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(raised) == 3 and not any(isinstance(e, ModelBroken) for e in raised)
    assert client.chat(MESSAGES).content == "ok"  # and the main thread's own streak is empty


def test_the_same_worker_failing_again_and_again_still_stops(scripted_server):
    server = scripted_server([error(400, "refused")] * 3)
    client = _client(server)
    for _ in range(2):
        with pytest.raises(ModelError):
            client.chat(MESSAGES)
    with pytest.raises(ModelBroken, match="3 calls in a row"):
        client.chat(MESSAGES)


def test_back_off_is_jittered_and_retry_after_is_kept(scripted_server):
    """Two workers failing at the same moment do not retry at the same moment; a server's
    Retry-After is waited for at least (plus at most a tenth)."""
    delays: list[float] = []
    for _ in range(8):
        server = scripted_server([error(429), "ok"])
        ModelClient(ModelConfig(model="m", base_url=server.base_url, backoff_base=1.0),
                    sleep=delays.append).chat(MESSAGES)
    assert all(0.5 <= d <= 1.0 for d in delays) and len(set(delays)) == len(delays)
    waits: list[float] = []
    server = scripted_server([error(429, retry_after="2"), "ok"])
    ModelClient(ModelConfig(model="m", base_url=server.base_url), sleep=waits.append).chat(MESSAGES)
    assert 2.0 <= waits[0] <= 2.2
    now: list[float] = []  # "come back at once" gets the jittered back-off: no lockstep
    for _ in range(4):
        server = scripted_server([error(429, retry_after="0"), "ok"])
        ModelClient(ModelConfig(model="m", base_url=server.base_url, backoff_base=1.0), sleep=now.append).chat(MESSAGES)
    assert all(0.5 <= d <= 1.0 for d in now) and len(set(now)) == len(now)


def test_rate_limits_on_a_quarter_of_requests_from_four_workers(scripted_server):
    """Four workers, a 429 for about a quarter of all requests (with Retry-After 0): every
    call gets its completion."""
    server = scripted_server(["ok"] * 80, rate_limit=0.25, retry_after="0")
    client = _client(server, max_retries=8)
    done: list[str] = []

    def worker() -> None:
        for _ in range(20):
            done.append(client.chat(MESSAGES).content)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    statuses = [status for _, status in server.answers]
    assert done == ["ok"] * 80 and statuses.count(429) >= 10


def test_stop_ends_a_back_off_wait_at_once(scripted_server):
    server = scripted_server([error(503, retry_after="30"), "late"])
    client = _client(server, retry_after_cap=60)
    threading.Timer(0.5, client.stop).start()
    started = time.monotonic()
    with pytest.raises(ModelError):
        client.chat(MESSAGES)
    assert time.monotonic() - started < 3


# --- 10. a router without a provider that takes tools


def test_a_router_without_tool_endpoints_is_no_unknown_model(scripted_server):
    server = scripted_server([], tool_endpoints=False)
    with pytest.raises(ModelToolsUnsupported, match="No endpoints found that support tool use"):
        _client(server).preflight()


# --- 11. cached prompt tokens are read


def test_cached_tokens_are_read(scripted_server):
    server = scripted_server([reply("hi", cached_tokens=7), reply("hi")])
    client = _client(server)
    assert client.chat(MESSAGES).cached_tokens == 7
    assert client.chat(MESSAGES).cached_tokens is None


def test_a_tool_call_keeps_its_provider_extras(scripted_server):
    server = scripted_server([reply(tool_calls=[tool_call("execute_bash", {"command": "ls"})])], thinking="gemini")
    answer = _client(server).chat(MESSAGES, tools=[{"type": "function", "function": {"name": "execute_bash"}}])
    assert answer.tool_calls[0].extras["extra_content"]["google"]["thought_signature"]


def test_an_endpoint_never_reached_is_given_up_on_soon():
    """Retries are for a server that answered before; a wrong URL is said after 3 attempts
    (about 3.5 s of back-off), not after the 8 retries rate limits get."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    waits: list[float] = []
    client = ModelClient(ModelConfig(model="m", base_url=f"http://127.0.0.1:{port}/v1"), sleep=waits.append)
    with pytest.raises(ModelError, match=r"cannot reach the model endpoint .*\(3 attempts\)"):
        client.chat(MESSAGES)
    assert len(waits) == 2 and sum(waits) <= 3.0
