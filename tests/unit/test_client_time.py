"""Hangs and deadlines, through the real client against the scripted server on 127.0.0.1:
an attempt never outlasts its ``timeout`` (body included, even when the server trickles
bytes), a call never outlasts the caller's deadline, and the server stops by itself."""

from __future__ import annotations

import time

import pytest

from cligym.agents.client import ModelBroken, ModelDeadline, ModelRetriesExhausted
from tests.llm_server import HANG_CAP, error, hang, reply
from tests.unit.test_client import MESSAGES, make_client, one_line


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("CLIGYM_API_KEY", "sk-test")


class Clock:
    def __init__(self) -> None:
        self.started = time.monotonic()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


@pytest.mark.parametrize("entry, said", [
    (hang(), "no answer within 0.5s"),                                   # accepts, never answers
    (hang(after_headers=True), "no complete answer within 0.5s (0 bytes came)"),  # headers, then nothing
    (hang(trickle=0.05), "no complete answer within 0.5s"),             # keep-alive bytes forever
])
def test_an_attempt_never_outlasts_its_timeout(scripted_server, entry, said):
    server = scripted_server([entry] * 2)
    client = make_client(server, timeout=0.5, max_retries=1)
    clock = Clock()

    with pytest.raises(ModelRetriesExhausted) as caught:
        client.chat(MESSAGES)

    assert 0.9 <= clock.elapsed < 2.5, clock.elapsed
    text = one_line(caught.value)
    assert said in text and "2 attempts" in text
    assert len(server.requests) == 2


@pytest.mark.parametrize("entry", [hang(), hang(after_headers=True), hang(trickle=0.05)])
def test_a_call_never_outlasts_the_deadline(scripted_server, entry):
    """timeout 30s per attempt, 5 retries: the deadline, 1s away, ends the call."""
    server = scripted_server([entry] * 3)
    client = make_client(server, timeout=30, max_retries=5)
    clock = Clock()

    with pytest.raises(ModelDeadline) as caught:
        client.chat(MESSAGES, deadline=time.monotonic() + 1.0)

    assert 0.9 <= clock.elapsed < 2.0, clock.elapsed
    assert not caught.value.fatal
    text = one_line(caught.value)
    assert text.startswith(f"no completion from the model endpoint at {server.base_url} within the time limit")
    assert client.requests == 1


def test_a_slow_answer_within_the_deadline_arrives(scripted_server):
    server = scripted_server([reply("worth the wait", delay=0.5)])
    answer = make_client(server, timeout=30).chat(MESSAGES, deadline=time.monotonic() + 5)
    assert answer.content == "worth the wait"


def test_no_back_off_sleeps_past_the_deadline(scripted_server):
    """A retry the deadline would cut (a long back-off or Retry-After) is not waited for."""
    server = scripted_server([error(503), reply("too late")])
    clock = Clock()
    with pytest.raises(ModelDeadline) as caught:
        make_client(server, backoff_base=10, backoff_cap=10).chat(MESSAGES, deadline=time.monotonic() + 2)
    assert clock.elapsed < 1.0
    assert "(1 attempt; last: HTTP 503" in one_line(caught.value)

    server = scripted_server([error(429, retry_after=30), reply("too late")])
    clock = Clock()
    with pytest.raises(ModelDeadline, match="HTTP 429"):
        make_client(server, retry_after_cap=60).chat(MESSAGES, deadline=time.monotonic() + 2)
    assert clock.elapsed < 1.0 and len(server.requests) == 1


def test_retries_go_on_until_the_deadline(scripted_server):
    server = scripted_server([reply("late", delay=1)] * 10)
    client = make_client(server, timeout=0.3, max_retries=10, backoff_base=0.01)
    clock = Clock()
    with pytest.raises(ModelDeadline, match=r"attempts; last: no answer within 0\.\d+s\)"):
        client.chat(MESSAGES, deadline=time.monotonic() + 1.0)
    assert 0.85 <= clock.elapsed < 1.6
    assert 3 <= client.requests <= 4  # the last one with the time left, if 0.1s or more


def test_a_passed_deadline_sends_nothing(scripted_server):
    server = scripted_server([reply("never")])
    with pytest.raises(ModelDeadline):
        make_client(server).chat(MESSAGES, deadline=time.monotonic() - 1)
    assert server.requests == []


def test_hangs_in_a_row_stop_the_run(scripted_server):
    """Every call cut by its deadline: after max_failed_calls of them the endpoint is broken."""
    server = scripted_server([reply("fine")] + [hang()] * 5)
    client = make_client(server, timeout=30, max_failed_calls=2)
    client.chat(MESSAGES)
    with pytest.raises(ModelDeadline):
        client.chat(MESSAGES, deadline=time.monotonic() + 0.3)
    with pytest.raises(ModelBroken) as caught:
        client.chat(MESSAGES, deadline=time.monotonic() + 0.3)
    assert caught.value.fatal and "2 calls in a row without a completion" in one_line(caught.value)


# --------------------------------------------------------------------------- the server itself


def test_a_hanging_server_stops_by_itself(scripted_server):
    """A hang lasts at most HANG_CAP, and closing the server ends it at once."""
    assert HANG_CAP <= 120
    server = scripted_server([hang(), hang(trickle=0.05), hang(seconds=0.2)])
    client = make_client(server, timeout=0.3, max_retries=0, max_failed_calls=10)
    for _ in range(3):
        with pytest.raises(ModelRetriesExhausted):
            client.chat(MESSAGES)
    clock = Clock()
    server.close()
    assert clock.elapsed < 2.0
    assert [status for _, status in server.answers] == [0, 200, 0]
