"""The command line against a model endpoint that answers garbage or hangs: ``cligym invert
--agent llm`` (its query generation calls the model first) stops with one line on stderr
and a non-zero exit code, never a traceback, and never runs every attempt for nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.llm_server import hang, html_page, raw, reply, truncated

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gold_dir(gold_copy, tmp_path_factory) -> Path:
    return gold_copy("markupsafe==3.0.2", tmp_path_factory.mktemp("garbage-gold"))


def invert(gold_dir: Path, out: Path, server, *, attempts: int = 3,
           **config) -> tuple[subprocess.CompletedProcess, float]:
    settings = {"model": "m", "base_url": server.base_url, "max_retries": 0, "backoff_base": 0.01, **config}
    config_file = out.parent / f"{out.name}.toml"
    config_file.write_text("".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in settings.items()))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "cligym", "invert", str(gold_dir), "-o", str(out), "--agent", "llm",
                           "--model-config", str(config_file), "-n", str(attempts), "-q"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**os.environ, "CLIGYM_API_KEY": "sk-test"})
    return proc, time.monotonic() - started


def error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


@pytest.mark.parametrize("answer, said", [
    (html_page("Open WebUI"), "answered with an HTML page ('Open WebUI'), not a chat completion"),
    (raw({"status": "ok", "data": []}), "answered with JSON without choices (keys: data, status)"),
])
def test_an_endpoint_that_is_no_chat_api_stops_the_run(gold_dir, tmp_path, scripted_server, answer, said):
    server = scripted_server([answer] * 5)
    proc, _ = invert(gold_dir, tmp_path / "run", server)
    assert proc.returncode == 2, proc.stderr
    assert said in error_line(proc)
    assert len(server.requests) == 1


def test_garbage_on_every_attempt_stops_the_run(gold_dir, tmp_path, scripted_server):
    """A completion first (an unusable query, sent back for correction), then cut-off JSON:
    the attempts end as bad queries until three calls in a row failed, then the run stops."""
    server = scripted_server([reply("not a JSON task")] + [truncated()] * 10)
    proc, _ = invert(gold_dir, tmp_path / "run", server, attempts=10)
    assert proc.returncode == 1, proc.stderr
    line = error_line(proc)
    assert "JSON cut off" in line and "3 calls in a row without a completion" in line
    assert len(server.requests) == 4  # not ten attempts' worth


def test_a_hanging_endpoint_stops_the_run(gold_dir, tmp_path, scripted_server):
    server = scripted_server([hang()] * 5)
    proc, seconds = invert(gold_dir, tmp_path / "run", server, timeout=1.0, max_retries=1)
    assert proc.returncode == 1, proc.stderr
    assert "retries exhausted; last: no answer within 1s" in error_line(proc)
    assert len(server.requests) == 2 and seconds < 60
