"""Where the export, validate, rollout and curate stages put things (cligym.layout), with no
engine needed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cligym.errors import BadInput
from cligym.layout import CurateDir, ExportDir, RolloutDir, TaskDir


def test_export_reports_sit_beside_the_export(tmp_path):
    out = ExportDir(tmp_path / "tasks")
    assert out.report == tmp_path / "tasks.export.json"
    assert out.validation == tmp_path / "tasks.validate.json"
    # a trailing "." or a relative path still names the directory's sibling
    here = Path.cwd()
    try:
        os.chdir(tmp_path / "..")
        assert ExportDir(Path(tmp_path.name) / "tasks").report == tmp_path / "tasks.export.json"
        os.chdir(tmp_path)
        assert ExportDir(Path(".")).report == tmp_path.parent / f"{tmp_path.name}.export.json"
    finally:
        os.chdir(here)
    with pytest.raises(BadInput):
        _ = ExportDir(Path("/")).report


def test_export_dir_empty_and_task_dirs(tmp_path):
    out = ExportDir(tmp_path / "tasks")
    assert out.is_empty()
    (tmp_path / "tasks" / "a").mkdir(parents=True)
    assert not out.is_empty()
    with pytest.raises(BadInput, match="holds no exported tasks"):
        out.task_dirs()
    (tmp_path / "tasks" / "a" / "task.toml").write_text("")
    (tmp_path / "tasks" / "b").mkdir()
    (tmp_path / "tasks" / "b" / "task.yaml").write_text("")
    assert [(t.name, t.format) for t in out.task_dirs()] == [("a", "harbor"), ("b", "tb")]


def test_task_dir_formats(tmp_path):
    harbor, tb = TaskDir(tmp_path / "h"), TaskDir(tmp_path / "t")
    with pytest.raises(BadInput, match="neither a Harbor task"):
        harbor.require_format()
    harbor.path.mkdir()
    harbor.task_toml.write_text("")
    tb.path.mkdir()
    tb.task_yaml.write_text("")
    assert harbor.require_format() == "harbor" and harbor.dockerfile == harbor.environment / "Dockerfile"
    assert tb.require_format() == "tb" and tb.dockerfile == tb.path / "Dockerfile"
    assert tb.selected_tests.parent == tb.tests


def test_rollout_and_curate_dirs(tmp_path):
    rollouts = RolloutDir(tmp_path / "r")
    assert rollouts.attempt_dirs() == []
    assert rollouts.result("task-1", 2).parent == rollouts.attempt("task-1", 2)
    rollouts.attempt("task-1", 2).mkdir(parents=True)
    (folder,) = rollouts.attempt_dirs()
    assert RolloutDir.records_in(folder) == (rollouts.trajectory("task-1", 2), rollouts.result("task-1", 2))
    with pytest.raises(BadInput):
        rollouts.attempt("../x", 0)
    curated = CurateDir(tmp_path / "c")
    assert curated.sft.parent == curated.summary.parent == curated.path
