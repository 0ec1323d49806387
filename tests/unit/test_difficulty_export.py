"""The measured difficulty in every export, and ``--min-difficulty``: task records made by
hand, with and without a ``Difficulty``; no engine (the JSONL format builds nothing, and
task.toml is written from a hand-made gold reference)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from cligym.errors import BadInput
from cligym.export.common import at_least, check_min_difficulty, difficulty
from cligym.export.harbor import task_toml
from cligym.export.jsonl import line, read_rows, row
from cligym.export.stage import export
from cligym.export.tb import task_yaml
from cligym.layout import ExportDir, RunDir
from cligym.models.export import ExportReport
from cligym.models.io import load, save
from cligym.models.issue import IssueText, TaskIssues
from cligym.models.reference import GoldReference
from cligym.models.task import LABELS, AppliedChange, Difficulty, Task

ROOT = Path(__file__).resolve().parents[2]
HARBOR_PY = ROOT / ".venv-harbor" / "bin" / "python"
MEASURED_KEYS = {"difficulty_k", "reveal_depth", "culprit_named", "sweeper_solves", "repair_breadth", "subsystems"}

#: Harbor's own model reads each task.toml; its metadata comes back as JSON.
HARBOR_CHECK = """
import json, sys, tomllib
from pathlib import Path
from harbor.models.task.config import TaskConfig
config = TaskConfig.model_validate(tomllib.loads(Path(sys.argv[1]).read_text()))
print(json.dumps(config.metadata))
"""

def measure(label: str) -> Difficulty:
    """A measure whose fields agree with ``label`` under ``Difficulty.grade``."""
    fields = {"easy": (1, 1, True, True, 1, 1), "medium": (2, 2, True, True, 2, 1),
              "hard": (3, 3, False, False, 4, 3)}[label]
    k, depth, named, sweeper, breadth, subsystems = fields
    assert Difficulty.grade(k, depth, named, sweeper, breadth) == label
    return Difficulty(k=k, reveal_depth=depth, culprit_named=named, sweeper_solves=sweeper, breadth=breadth,
                      subsystems=subsystems, label=label)


def make_task(instance_id: str, label: str | None = None, *, scenario: str = "", fair: bool = True) -> Task:
    """A one-operator task whose evidence-based score is easy (one error kind, a category
    whose error names what is broken)."""
    return Task(
        instance_id=instance_id, repo="demo==1.0", image_name="cligym/gold-demo:1", gold_image_id="sha256:d",
        workdir="/testbed", test_command="python -m pytest", dockerfile=["RUN chmod 000 /opt/x"],
        applied=[AppliedChange(name="perm_denied", category="filesystem_permissions", target="/opt/x", symptom="",
                                 hint="", necessary=True)],
        FAIL_TO_PASS=["t.py::f"], PASS_TO_PASS=["t.py::p"], selected_tests=["t.py::f", "t.py::p"],
        solution="#!/bin/sh\n",
        errors={"t.py::f": "PermissionError: [Errno 13]"}, fail_fraction=.5, suite_size=2, seed=0, attempt=0,
        offline_fair=fair, scenario=scenario, difficulty=measure(label) if label else None)


def reference(task: Task) -> GoldReference:
    return GoldReference(
        instance_id=task.instance_id, workdir=task.workdir, test_command=task.test_command,
        interpreter="/usr/bin/python3", command_path="/usr/bin/python3", rootdir=task.workdir,
        fail_to_pass=task.FAIL_TO_PASS, pass_to_pass=task.PASS_TO_PASS, order=["t.py::f", "t.py::p"], keys=[],
        pristine=[], foreign=[], conftests=[], shadow_dirs={}, protected_modules=[], spec=[], fingerprint=[],
        path_env="/usr/bin:/bin")


def issues(task: Task) -> TaskIssues:
    return TaskIssues(instance_id=task.instance_id, texts={
        "strong": IssueText(style="strong", with_hint="The tests fail. Hint: permissions.",
                            without_hint="The tests fail.")})


def harbor_metadata(toml_text: str, tmp_path: Path) -> dict:
    """The metadata as Harbor's TaskConfig reads it (the check fails if it refuses the file)."""
    path = tmp_path / "task.toml"
    path.write_text(toml_text)
    proc = subprocess.run([str(HARBOR_PY), "-c", HARBOR_CHECK, str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# -- the label and the measure in each format ------------------------------------------------


def test_the_label_is_the_measures_else_the_evidence_score():
    old = make_task("demo.old")
    assert difficulty(old) == "easy"  # the evidence-based score of an older record
    for label in LABELS:
        task = make_task(f"demo.{label}", label)
        assert difficulty(task) == label
        fields = dict(line.split(": ", 1) for line in task_yaml(task, "Fix it.").splitlines())
        assert json.loads(fields["difficulty"]) == label  # Terminal-Bench 1.0's task.yaml


def test_task_toml_carries_the_measure(tmp_path):
    task = make_task("demo.hard", "hard", scenario="a botched upgrade")
    meta = tomllib.loads(task_toml(task, reference(task)))["metadata"]
    assert meta["difficulty"] == "hard" and meta["scenario"] == "a botched upgrade"
    assert {key: meta[key] for key in MEASURED_KEYS} == {
        "difficulty_k": 3, "reveal_depth": 3, "culprit_named": False, "sweeper_solves": False,
        "repair_breadth": 4, "subsystems": 3}


def test_task_toml_without_a_measure_has_no_measured_keys():
    task = make_task("demo.old")
    meta = tomllib.loads(task_toml(task, reference(task)))["metadata"]
    assert meta["difficulty"] == "easy" and not (MEASURED_KEYS | {"scenario"}) & set(meta)


@pytest.mark.skipif(not HARBOR_PY.exists(), reason="no .venv-harbor (scripts/setup.sh makes it)")
@pytest.mark.parametrize("label", [None, *LABELS])
def test_task_toml_validates_in_harbors_task_config(label, tmp_path):
    task = make_task(f"demo.{label}", label, scenario="a disk filled up" if label else "")
    meta = harbor_metadata(task_toml(task, reference(task)), tmp_path)
    assert meta["difficulty"] == (label or "easy")
    if label:
        assert meta["difficulty_k"] == task.difficulty.k and meta["scenario"] == "a disk filled up"
    else:
        assert not (MEASURED_KEYS | {"scenario"}) & set(meta)


def test_jsonl_row_carries_the_measure_or_null():
    task = make_task("demo.medium", "medium", scenario="a stale venv")
    found = row(task, issues(task), "strong")
    written = json.loads(line(found))
    assert (written["difficulty"] == task.difficulty.model_dump(mode="json")
            and written["difficulty"]["label"] == "medium")
    assert written["scenario"] == "a stale venv"
    old = json.loads(line(row(make_task("demo.old"), issues(make_task("demo.old")), "strong")))
    assert (old["difficulty"], old["scenario"]) == (None, "")


# -- --min-difficulty ------------------------------------------------------------------------


def test_at_least_orders_easy_medium_hard():
    for i, label in enumerate(LABELS):
        task = make_task("demo.x", label)
        assert [at_least(task, minimum) for minimum in LABELS] == [j <= i for j in range(len(LABELS))]
    # without a measure, only the filter that leaves nothing out lets a task through
    assert [at_least(make_task("demo.old"), minimum) for minimum in LABELS] == [True, False, False]
    assert check_min_difficulty(None) is None and check_min_difficulty("medium") == "medium"
    with pytest.raises(BadInput, match=r"^unknown difficulty 'Hard'; choose easy, medium or hard$"):
        check_min_difficulty("Hard")


@pytest.fixture
def run_dir(tmp_path) -> Path:
    """e: easy, m: medium, h: hard, u: no measure (all offline-fair); n: hard, not offline-fair."""
    run = RunDir(tmp_path / "run")
    for task in (make_task("demo.e", "easy"), make_task("demo.m", "medium"), make_task("demo.h", "hard"),
                 make_task("demo.u"), make_task("demo.n", "hard", fair=False)):
        save(task, run.task_record(task.instance_id))
        save(issues(task), run.issues(task.instance_id))
    return run.path


@pytest.mark.parametrize("minimum, kept, easier, unmeasured", [
    (None, ["demo.e", "demo.h", "demo.m", "demo.u"], [], 0),
    ("easy", ["demo.e", "demo.h", "demo.m", "demo.u"], [], 0),  # easy leaves nothing out, unmeasured included
    ("medium", ["demo.h", "demo.m"], ["demo.e", "demo.u"], 1),
    ("hard", ["demo.h"], ["demo.e", "demo.m", "demo.u"], 1),
])
def test_min_difficulty_filters_and_counts(run_dir, tmp_path, minimum, kept, easier, unmeasured):
    out = tmp_path / "out"
    report = export(run_dir, "jsonl", out, min_difficulty=minimum)
    assert sorted(report.tasks) == kept and sorted(r.instance_id for r in read_rows(ExportDir(out))) == kept
    assert (report.min_difficulty, report.below_min_difficulty, report.unmeasured_left_out) == (
        minimum, len(easier), unmeasured)
    # the offline filter still leaves out n; each task left out says why
    assert sorted(report.left_out) == sorted(["demo.n", *easier])
    assert "offline-fair" in report.left_out["demo.n"]
    if "demo.u" in easier:
        assert report.left_out["demo.u"] == f"difficulty not measured (an older record); --min-difficulty {minimum}"
    if "demo.e" in easier:
        assert report.left_out["demo.e"] == f"difficulty easy is below --min-difficulty {minimum}"
    assert load(ExportReport, ExportDir(out).report) == report


def test_with_network_the_difficulty_filter_sees_every_task(run_dir, tmp_path):
    report = export(run_dir, "jsonl", tmp_path / "out", offline_only=False, min_difficulty="hard")
    assert sorted(report.tasks) == ["demo.h", "demo.n"] and report.below_min_difficulty == 3


def test_nothing_hard_enough_is_bad_input(tmp_path):
    run = RunDir(tmp_path / "run")
    for task in (make_task("demo.e", "easy"), make_task("demo.u")):
        save(task, run.task_record(task.instance_id))
        save(issues(task), run.issues(task.instance_id))
    with pytest.raises(BadInput, match=r"none of the 2 tasks .* is at least medium \(1 of them unmeasured\)"):
        export(run.path, "jsonl", tmp_path / "out", min_difficulty="medium")
    assert not (tmp_path / "out").exists()  # refused before anything was written


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cligym", "export", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env={**os.environ, "COLUMNS": "200"})


def test_cli_says_how_many_the_filter_left_out(run_dir, tmp_path):
    proc = _cli(str(run_dir), "-f", "jsonl", "-o", str(tmp_path / "j"), "--min-difficulty", "medium", "--json")
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout)
    assert sorted(said["tasks"]) == ["demo.h", "demo.m"] and said["min_difficulty"] == "medium"
    assert (said["below_min_difficulty"], said["unmeasured_left_out"], len(said["left_out"])) == (2, 1, 3)
    proc = _cli(str(run_dir), "-f", "jsonl", "-o", str(tmp_path / "s"), "--min-difficulty", "hard")
    assert proc.returncode == 0, proc.stderr
    assert "exported 1 tasks as jsonl" in proc.stdout
    assert "left out 1 task(s) that are not offline-fair" in proc.stdout
    assert "--min-difficulty hard left out 3 task(s), 1 of them unmeasured" in proc.stdout
    proc = _cli(str(run_dir), "-f", "jsonl", "-o", str(tmp_path / "a"))
    assert proc.returncode == 0 and "--min-difficulty" not in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("value", ["extreme", "Hard", ""])
def test_cli_bad_min_difficulty_is_one_line_and_exit_2(value, run_dir, tmp_path):
    proc = _cli(str(run_dir), "-f", "jsonl", "-o", str(tmp_path / "o"), "--min-difficulty", value)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0] == f"cligym: error: unknown difficulty {value!r}; choose easy, medium or hard"
    assert not (tmp_path / "o").exists() and not proc.stdout
