"""Export real verified tasks (Harbor, Terminal-Bench 1.0, JSONL), check their files against
the harnesses' own models, and run them as oracle and nop."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

import pytest

from cligym.export.stage import export
from cligym.issue import leaks
from cligym.layout import ExportDir, RunDir
from cligym.models.export import ExportReport
from cligym.models.io import load, save
from cligym.models.task import Task
from cligym.models.validate import ValidationReport
from cligym.models.verify import VerifyReport
from cligym.validate import validate, validate_task

ROOT = Path(__file__).resolve().parents[2]
HARBOR_PY = ROOT / ".venv-harbor" / "bin" / "python"

HARBOR_CHECK = """
import sys, tomllib
from pathlib import Path
from harbor.models.task.config import TaskConfig
from harbor.models.task.paths import TaskPaths
for d in sys.argv[1:]:
    paths = TaskPaths(Path(d))
    config = TaskConfig.model_validate(tomllib.loads(paths.config_path.read_text()))
    assert config.task is not None and config.task.name.startswith("cligym/"), d
    assert config.environment.network_mode.value == "no-network", d
    assert paths.instruction_path.is_file() and paths.environment_dir.is_dir(), d
    assert (paths.environment_dir / "Dockerfile").is_file(), d
    assert paths.test_path.is_file() and paths.solve_path.is_file(), d
print("harbor-ok", len(sys.argv) - 1)
"""

@pytest.fixture(scope="module")
def run_dir(markupsafe_run):
    run = markupsafe_run / "run"
    assert len(RunDir(run).task_records()) >= 2
    return run


def test_harbor_export_loads_in_harbor_models_and_validates(run_dir, markupsafe_harbor, runtime):
    """The run's Harbor export (made once per test run: the rollout tests read it too)."""
    out = markupsafe_harbor
    # the report is saved beside the export: inside it a harness would take it for a task
    report = load(ExportReport, ExportDir(out).report)
    dirs = task_dirs(out)
    assert len(dirs) == len(report.tasks) >= 2 and report.format == "harbor"
    assert Path(report.output).resolve() == out.resolve()
    assert sorted(p.name for p in out.iterdir()) == sorted(report.tasks)
    for d in dirs:
        config = tomllib.loads((d / "task.toml").read_text())
        assert config["environment"]["network_mode"] == "no-network"
        assert {"category", "operators", "source_project", "difficulty"} <= set(config["metadata"])
        assert os.access(d / "tests" / "test.sh", os.X_OK) and os.access(d / "solution" / "solve.sh", os.X_OK)
        assert (d / "environment" / "Dockerfile").read_text().splitlines()[1].startswith("FROM cligym/gold-")
        test_sh = (d / "tests" / "test.sh").read_text()
        # the verifier runs under the bundled static busybox, never the image's shell
        assert test_sh.startswith("#!/tests/bin/busybox sh\n") and "set -e" not in test_sh
        assert os.access(d / "tests" / "bin" / "busybox", os.X_OK)
        assert {"pristine.tar", "fingerprint.txt", "keys.tsv", "reference.json"} <= {
            p.name for p in (d / "tests" / "reference").iterdir()}
        task = load(Task, run_dir / "tasks" / d.name / "instance.json")
        assert leaks((d / "instruction.md").read_text(), task) == []  # --no-hint is the default
        assert "Hint:" not in (d / "instruction.md").read_text()
    if HARBOR_PY.exists():
        proc = subprocess.run([str(HARBOR_PY), "-c", HARBOR_CHECK, *map(str, dirs)], capture_output=True, text=True)
        assert proc.returncode == 0 and "harbor-ok" in proc.stdout, proc.stderr
    # validate's way on one task (test_rollout's oracle and nop score every task of this export)
    result = validate_task(runtime, dirs[0])
    assert (result.oracle.reward, result.nop.reward) == (1.0, 0.0), result


def test_harbor_environment_and_test_sh_as_a_harness_runs_them(run_dir, runtime, tmp_path):
    out = tmp_path / "harbor"
    export(run_dir, "harbor", out, hint=True, runtime=runtime)
    task_dir = task_dirs(out)[0]
    assert "Hint:" in (task_dir / "instruction.md").read_text()
    tag = f"cligym/test-harbor-env:{uuid.uuid4().hex[:12]}"  # another test run may build the same task
    runtime.build(task_dir / "environment", tag, nocache=True)
    try:
        for solve, expected in ((False, "0"), (True, "1")):
            with runtime.session(tag) as session:
                session.exec(["mkdir", "-p", "/logs/verifier"])
                if solve:
                    session.upload_dir(task_dir / "solution", "/solution")
                    assert session.exec(["bash", "-c", "(/solution/solve.sh)"]).ok
                # the tests arrive only after the agent is done, and are not in the image
                assert not session.exec(["test", "-e", "/tests"]).ok
                session.upload_dir(task_dir / "tests", "/tests")
                session.exec(["bash", "-c", "chmod +x /tests/test.sh && "
                                            "(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1"])
                assert session.get_file("/logs/verifier/reward.txt").decode().strip() == expected
                said = session.get_file("/logs/verifier/test-stdout.txt").decode()
                assert f"cligym verifier: reward {expected}: " in said, said[-2000:]
                if solve:  # (with nothing done the verifier may refuse before pytest runs)
                    assert session.get_file("/logs/verifier/junit.xml")
    finally:
        runtime.remove_image(tag)


@pytest.fixture(scope="module")
def tb_tasks(run_dir, runtime, tmp_path_factory) -> Path:
    """The run exported for Terminal-Bench 1.0, once for this module (its tests read it)."""
    out = tmp_path_factory.mktemp("tb") / "tb"
    export(run_dir, "tb", out, runtime=runtime)
    return out


def test_tb_export_matches_terminal_bench_layout_and_validates(tb_tasks, runtime):
    dirs = task_dirs(tb_tasks)
    for d in dirs:
        fields = {}
        for line in (d / "task.yaml").read_text().splitlines():
            key, _, value = line.partition(": ")
            fields[key] = json.loads(value)
        assert isinstance(fields["instruction"], str) and fields["instruction"]
        assert fields["difficulty"] in {"easy", "medium", "hard"} and fields["parser_name"] == "pytest"
        assert isinstance(fields["tags"], list) and fields["max_test_timeout_sec"] > 0
        compose = (d / "docker-compose.yaml").read_text()
        for var in ("T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME", "T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME",
                    "T_BENCH_TEST_DIR", "T_BENCH_TASK_LOGS_PATH", "T_BENCH_CONTAINER_LOGS_PATH"):
            assert "${" + var + "}" in compose
        assert "client:" in compose and "sleep infinity" in compose
        assert "/bin/busybox sh " in (d / "run-tests.sh").read_text()
        assert "reference/verifier.sh tb " in (d / "run-tests.sh").read_text()
        assert "-rA" in (d / "tests" / "reference" / "pytest-args.txt").read_text().split()
        assert (d / "solution.sh").is_file() and (d / "tests").is_dir()
    result = validate_task(runtime, dirs[0])
    assert (result.oracle.reward, result.nop.reward) == (1.0, 0.0), result


def test_jsonl_export_loads_with_datasets(run_dir, tmp_path, monkeypatch):
    out = tmp_path / "jsonl"
    report = export(run_dir, "jsonl", out)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    ds = datasets.load_dataset("json", data_files=str(out / "tasks.jsonl"), split="train",
                               cache_dir=str(tmp_path / "hf"))
    assert ds.num_rows == len(report.tasks)
    expected = {"instance_id", "repo", "image_name", "dockerfile", "FAIL_TO_PASS", "PASS_TO_PASS",
                "problem_statement", "problem_statement_hint", "category", "operators", "solution"}
    assert expected <= set(ds.column_names)
    for row in ds:
        assert row["FAIL_TO_PASS"] and "Hint:" in row["problem_statement_hint"]
        assert "Hint:" not in row["problem_statement"]


def task_dirs(out: Path) -> list[Path]:
    return [task.path for task in ExportDir(out).task_dirs()]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "cligym", *args], capture_output=True, text=True, timeout=600)


def test_export_bad_input(run_dir, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    cases = [
        (["export", str(tmp_path / "empty"), "-o", str(tmp_path / "o1")], "has no tasks"),
        (["export", str(run_dir), "--format", "swe", "-o", str(tmp_path / "o2")], "unknown format"),
        (["export", str(run_dir), "-o", str(tmp_path / "full")], "--force"),
        (["validate", str(tmp_path / "empty")], "holds no exported tasks"),
    ]
    for args, needle in cases:
        proc = _cli(*args)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode != 0 and len(lines) == 1 and needle in lines[0], proc.stderr


def test_missing_gold_image_says_how_to_load(run_dir, runtime, tmp_path):
    task_path = next((run_dir / "tasks").glob("*/instance.json"))
    copy = tmp_path / "run" / "tasks" / task_path.parent.name / "instance.json"
    task = load(Task, task_path)
    save(task.model_copy(update={"image_name": "cligym/gold-gone:0"}), copy)
    proc = _cli("export", str(tmp_path / "run"), "-o", str(tmp_path / "o"))
    assert proc.returncode != 0 and "cligym/gold-gone:0" in proc.stderr and "images load" in proc.stderr


def test_images_save_and_load_round_trip(tb_tasks, tmp_path):
    assert all(p.is_dir() for p in tb_tasks.iterdir())  # nothing but task dirs
    proc = _cli("images", "save", str(tb_tasks), "-o", str(tmp_path / "gold.tar"), "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["bytes"] > 10_000_000 and info["bytes_per_task"] == round(info["bytes"] / info["tasks"])
    proc = _cli("images", "load", str(tmp_path / "gold.tar"), "--json")
    assert proc.returncode == 0 and info["images"][0] in json.loads(proc.stdout)["loaded"]


def _one_task_run(run_dir: Path, dest: Path) -> Path:
    """A copy of the run holding its first task only, without issue texts."""
    task_path = RunDir(run_dir).task_records()[0]
    copy = RunDir(dest)
    save(load(Task, task_path), copy.task_record(task_path.parent.name))
    return dest


def test_cli_saves_every_stage_report(run_dir, runtime, tmp_path):
    one = _one_task_run(run_dir, tmp_path / "run")
    proc = _cli("export", str(one), "-o", str(tmp_path / "h"), "--json")
    assert proc.returncode == 0, proc.stderr
    (name,) = json.loads(proc.stdout)["tasks"]
    assert RunDir(one).issues(name).is_file()  # the issue stage filled in the missing texts
    assert load(ExportReport, tmp_path / "h.export.json").model_dump() == json.loads(proc.stdout)
    assert [p.name for p in (tmp_path / "h").iterdir()] == [name]

    proc = _cli("validate", str(tmp_path / "h"), "--json", "-o", str(tmp_path / "v.json"))
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["ok"] for r in rows] == [True] and set(rows[0]) == {
        "task", "format", "oracle", "nop", "seconds", "ok", "digest", "probes", "probe_seconds"}
    saved = load(ValidationReport, tmp_path / "v.json")
    assert (saved.validated, saved.ok) == (1, 1) and saved.results[0].model_dump() == rows[0]
    assert not (tmp_path / "h.validate.json").exists()

    proc = _cli("verify", str(one), "--gold", str(run_dir.parent / "gold"), "--json")
    assert proc.returncode == 0, proc.stderr
    checks = json.loads(proc.stdout)
    assert [(c["instance_id"], c["ok"]) for c in checks] == [(name, True)]
    report = load(VerifyReport, RunDir(one).verify_report)
    assert (report.checked, report.ok) == (1, 1) and [t.model_dump() for t in report.tasks] == checks


def test_validate_report_defaults_to_beside_the_export(tb_tasks, runtime, tmp_path):
    first = ExportDir(tb_tasks).task_dirs()[0]
    shutil.copytree(first.path, tmp_path / "tb" / first.name)
    report = validate(tmp_path / "tb", runtime=runtime)
    assert report.all_ok and load(ValidationReport, tmp_path / "tb.validate.json") == report
    assert [p.name for p in (tmp_path / "tb").iterdir()] == [first.name]  # nothing but the task inside
