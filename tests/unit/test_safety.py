"""The tool never harms its host or its data: record ids cannot lead writes out of their
directory, and an engine that never answers is a clear error in seconds."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cligym.errors import BadInput
from cligym.export.stage import export
from cligym.layout import RunDir
from cligym.models import TaskInstance
from cligym.models.io import load, save

RECORD = Path(__file__).parents[1] / "data" / "records-0.1.0" / "instance.json"


def cli(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cligym", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


class SilentEngine:
    """A unix socket that accepts connections and never says a word."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(16)
        self.held: list[socket.socket] = []
        self.open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self.open:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.open = False
        self.listener.close()
        for conn in self.held:
            conn.close()


@pytest.mark.parametrize("bad_id", ["../../escaped/pwn", "/tmp/absolute", "a/../../b"])
def test_a_record_id_cannot_lead_an_export_out_of_its_directory(tmp_path, bad_id):
    run = RunDir(tmp_path / "run")
    task = load(TaskInstance, RECORD).model_copy(update={"instance_id": bad_id})
    path = run.tasks / "innocent" / "instance.json"  # the folder name looks fine, the record does not
    save(task, path)
    out = tmp_path / "deep" / "out"
    with pytest.raises(BadInput, match="refusing the instance id"):
        export(run.path, "jsonl", out)
    escaped = [p for p in tmp_path.rglob("*") if p.is_file() and p != path]
    assert escaped == []  # nothing written anywhere, inside or outside


def test_an_engine_that_never_answers_is_a_clear_error_in_seconds(tmp_path):
    engine = SilentEngine(tmp_path / "silent.sock")
    try:
        started = time.monotonic()
        proc = cli("clean", env={"DOCKER_HOST": f"unix://{engine.path}"}, timeout=120)
        took = time.monotonic() - started
    finally:
        engine.close()
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 3, proc.stderr
    assert len(lines) == 1 and "Docker engine" in lines[0] and "Traceback" not in proc.stderr
    assert took < 30
