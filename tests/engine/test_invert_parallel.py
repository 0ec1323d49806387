"""LLM inversion attempts several at a time (``--workers``) against the scripted server
with reply latency: the same attempts as one at a time, requests really concurrent, the
memory pool fixed by attempt number, nothing left in the engine."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cligym.agents.client import ModelClient, ModelConfig
from cligym.agents.loop import AgentLimits
from cligym.cli.signals import INTERRUPTED
from cligym.errors import BadInput
from cligym.invert.agentic import invert_with_agent
from cligym.invert.query import QUERY_SYSTEM
from tests.llm_server import ScriptedServer
from tests.scripted_agents import DegradingPolicy, attempt_key

#: the pure-Python fallback removed (twice as often: two attempts with one delta make a task
#: and a duplicate) and the speedups header damaged
KINDS = [1, 1, 0]


@pytest.fixture(scope="module")
def gold_dir(gold_copy, tmp_path_factory) -> Path:
    return gold_copy("markupsafe==3.0.2", tmp_path_factory.mktemp("parallel-gold"))


def _invert(gold_dir: Path, out: Path, server, workers: int, attempts: int = 4):
    client = ModelClient(ModelConfig(model="scripted", base_url=server.base_url))
    return invert_with_agent(gold_dir, out, client, attempts=attempts, refine_rate=0.5, workers=workers,
                             limits=AgentLimits(max_steps=8, max_seconds=300))


def _attempts(run: Path, attempts: int = 4) -> list[tuple]:
    records = [json.loads((run / "candidates" / f"{i:04d}.json").read_text()) for i in range(attempts)]
    return [(r["status"], r.get("discard_kind"), r["sample"], r["query"]["title"], r["refined"],
             r.get("FAIL_TO_PASS"), r.get("instance_id")) for r in records]


def _memory_by_attempt(server, run: Path) -> dict[int, list[str]]:
    """Each attempt's memory pool, as its first query request showed it."""
    titles = {json.loads((run / "candidates" / f"{i:04d}.json").read_text())["query"]["title"]: i for i in range(4)}
    pools = {}
    for request in server.requests:
        prompt = request["messages"][-1]["content"]
        if request["messages"][0]["content"] != QUERY_SYSTEM or prompt.startswith("Here is a draft"):
            continue
        digest = attempt_key(prompt)[:8]
        attempt = next(i for title, i in titles.items() if title.endswith(f"#{digest}"))
        pool = prompt.split("Assignments already written")[1].split("Requirements:")[0]
        pools[attempt] = sorted(t for t in titles if t in pool)
    return pools


@pytest.fixture(scope="module")
def one_at_a_time(gold_dir, tmp_path_factory):
    """The reference: the run made one attempt at a time (its summary, server and directory)."""
    run = tmp_path_factory.mktemp("one") / "run"
    with ScriptedServer([DegradingPolicy(KINDS, delay=0.3)] * 500) as server:
        return _invert(gold_dir, run, server, workers=1), server, run


@pytest.mark.slow  # the LLM inversion's long case; the shared runner's order is a unit test
def test_attempts_at_once_make_the_same_attempts(gold_dir, one_at_a_time, scripted_server, tmp_path, runtime):
    before = set(runtime.labelled_containers(mine=True))
    one, one_server, one_run = one_at_a_time
    three_server = scripted_server([DegradingPolicy(KINDS, delay=0.3)] * 500)
    three = _invert(gold_dir, tmp_path / "three", three_server, workers=3)

    assert _attempts(tmp_path / "three") == _attempts(one_run)  # same seed, same attempts
    assert three.verified == one.verified >= 1 and three.discard_reasons == one.discard_reasons
    assert one.discard_reasons.get("duplicate")  # which attempt keeps the delta does not depend on speed
    assert one_server.peak == 1 and three_server.peak >= 2  # the requests really overlapped
    # the memory pool: every earlier attempt one at a time; attempts up to i - 3 three at once
    titles = [a[3] for a in _attempts(one_run)]
    assert _memory_by_attempt(one_server, one_run) == {i: sorted(titles[:i]) for i in range(4)}
    assert _memory_by_attempt(three_server, tmp_path / "three") == {0: [], 1: [], 2: [], 3: [titles[0]]}
    assert set(runtime.labelled_containers(mine=True)) == before


def test_workers_must_be_positive(gold_dir, scripted_server, tmp_path):
    with pytest.raises(BadInput, match="--workers"):
        _invert(gold_dir, tmp_path / "run", scripted_server([]), workers=0)


@pytest.mark.slow
def test_a_signalled_run_resumes_to_the_same_attempts(gold_dir, one_at_a_time, scripted_server, tmp_path, runtime):
    """SIGTERM while three attempts run: exit 143, no container of the run left, finished
    attempts kept; the same command then makes the attempts the uninterrupted run made."""
    server = scripted_server([DegradingPolicy(KINDS, delay=0.3)] * 1000)
    run = tmp_path / "run"
    command = [sys.executable, "-m", "cligym", "invert", str(gold_dir), "-o", str(run), "--agent", "llm", "--model",
               "scripted", "--base-url", server.base_url, "-n", "4", "--refine-rate", "0.5", "--max-steps", "8",
               "--workers", "3", "-q"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not list((run / "candidates").glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # the other attempts are under way
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=200)
    finally:
        proc.kill()
    assert proc.returncode == 143, err[-2000:]
    assert INTERRUPTED in err
    assert runtime.labelled_containers(pid=proc.pid) == []  # the running attempts' containers are gone
    kept = sorted(p.name for p in (run / "candidates").glob("*.json"))
    assert 1 <= len(kept) < 4
    again = subprocess.run(command + ["--json"], capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    assert _attempts(run) == _attempts(one_at_a_time[2])
