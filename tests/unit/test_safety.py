"""The tool never harms its host or its data: record ids cannot lead writes out of their
directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cligym.errors import BadInput
from cligym.export.stage import export
from cligym.layout import RunDir
from cligym.models.io import load, save
from cligym.models.task import Task

RECORD = Path(__file__).parents[1] / "data" / "records-0.1.0" / "instance.json"


def cli(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cligym", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("bad_id", ["../../escaped/pwn", "/tmp/absolute", "a/../../b"])
def test_a_record_id_cannot_lead_an_export_out_of_its_directory(tmp_path, bad_id):
    run = RunDir(tmp_path / "run")
    task = load(Task, RECORD).model_copy(update={"instance_id": bad_id})
    path = run.tasks / "innocent" / "instance.json"  # the folder name looks fine, the record does not
    save(task, path)
    out = tmp_path / "deep" / "out"
    with pytest.raises(BadInput, match="refusing the instance id"):
        export(run.path, "jsonl", out)
    escaped = [p for p in tmp_path.rglob("*") if p.is_file() and p != path]
    assert escaped == []  # nothing written anywhere, inside or outside
