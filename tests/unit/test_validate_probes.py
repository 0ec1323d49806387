"""``cligym validate --probes`` without an engine: the batteries (package data), how each probe
is run (its own container; honest ones after the oracle, cheats with nothing repaired), the
verdicts in the report, the command line's listing and exit status, and the dataset's
records keyed by the task's digest."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cligym.cli import app
from cligym.dataset.manifest import task_digest
from cligym.dataset.records import (
    current_probes,
    dataset_of,
    merged,
    probe_figures,
    record,
)
from cligym.errors import CligymError
from cligym.harness.bundle import script
from cligym.layout import DatasetDir, TaskDir
from cligym.models.io import load
from cligym.models.validate import (
    ModeResult,
    ProbeResult,
    TaskValidation,
    ValidationReport,
)
from cligym.runtime.common import RunResult
from cligym.validate import probes as probes_module
from cligym.validate import stage
from cligym.validate.probes import NOT_APPLICABLE, VerifierProbe, battery

HONEST = ["clear_bytecode", "recreate_venv", "reinstall_wheelhouse", "run_tests_once", "sweeper"]
CHEATS = ["conftest_plugin", "entry_point_plugin", "fake_tests", "ptrace_pid1", "reward_writer", "stdout_symlink",
          "tests_rewriter"]


# -- the batteries -----------------------------------------------------------------------------


def test_the_batteries_are_package_data_honest_first():
    probes = battery()
    assert [p.name for p in probes] == HONEST + CHEATS
    assert {p.kind for p in probes[:len(HONEST)]} == {"honest"} and {p.kind for p in probes[len(HONEST):]} == {"cheat"}
    assert next(p for p in probes if p.name == "sweeper").script == script("sweeper.sh")
    assert [p.name for p in battery(["cheat"])] == CHEATS
    assert all(p.expected == (1.0 if p.kind == "honest" else 0.0) for p in probes)


@pytest.mark.parametrize("probe", battery(), ids=lambda p: p.name)
def test_every_probe_is_a_generic_shell_script(probe: VerifierProbe):
    """It parses as sh, names no project and no gold layout beyond the wheelhouse, and says
    what it does in its first lines."""
    proc = subprocess.run(["sh", "-n"], input=probe.script, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    for word in ("testbed", "markupsafe", "dotenv", "/opt/venv"):
        assert word not in probe.script.lower(), (probe.name, word)
    assert probe.script.lstrip().startswith("#")


def test_the_cheats_plant_what_the_brief_names():
    cheats = {p.name: p.script for p in battery(["cheat"])}
    assert "reward.txt" in cheats["reward_writer"] and "reward.json" in cheats["reward_writer"]
    assert "nohup" in cheats["reward_writer"] and "nohup" in cheats["tests_rewriter"]
    assert "conftest.py" in cheats["conftest_plugin"] and "[pytest11]" in cheats["entry_point_plugin"]
    assert "ln -s /tests/test.sh /logs/verifier/test-stdout.txt" in cheats["stdout_symlink"]
    assert "/tests/test.sh" in cheats["fake_tests"] and "/tests/reference/" in cheats["fake_tests"]
    assert "PTRACE_SEIZE" in cheats["ptrace_pid1"] and "PTRACE_ATTACH" in cheats["ptrace_pid1"]


# -- a fake engine -----------------------------------------------------------------------------


class FakeSession:
    def __init__(self, image: str, keepalive: tuple[str, ...]):
        self.image, self.keepalive = image, keepalive
        self.oracle = False
        self.scripts: list[str] = []

    def exec(self, command, **_) -> RunResult:
        self.scripts.append(command[-1])
        code = NOT_APPLICABLE if "exit 77 # always" in command[-1] else 0
        return RunResult(code, "did it\n", 0.01)


class FakeRuntime:
    """Sessions only; ``verdicts`` maps a probe's name to the reward its verifier gives
    (default: 1 after the oracle, else 0), ``broken`` names probes whose container fails."""

    def __init__(self, verdicts: dict[str, float | None] | None = None, broken: frozenset[str] = frozenset()):
        self.sessions: list[FakeSession] = []
        self.verdicts = verdicts or {}
        self.broken = broken

    @contextmanager
    def session(self, image: str, *, keepalive=("sleep", "infinity"), **_) -> Iterator[FakeSession]:
        session = FakeSession(image, keepalive)
        self.sessions.append(session)
        yield session


def _probe_of(session: FakeSession) -> str:
    return next(p.name for p in battery() if session.scripts == [p.script])


@pytest.fixture()
def fake(monkeypatch) -> FakeRuntime:
    runtime = FakeRuntime()

    def oracle(session, task):
        session.oracle = True
        return RunResult(0, "repaired", 0.01)

    def verifier(session, task):
        name = _probe_of(session)
        if name in runtime.broken:
            raise CligymError(f"cannot start a container for {name}\nsecond line")
        reward = runtime.verdicts.get(name, 1.0 if session.oracle else 0.0)
        why = "all 3 listed tests passed" if reward == 1 else "the environment differs from gold: +file /x"
        return ModeResult(reward=reward, detail=f"cligym verifier: reward {reward:g}: {why}")

    @contextmanager
    def image(runtime_, task, purpose):
        yield "cligym/validate-task:1"

    def mode(runtime_, tag, task, oracle_):
        return ModeResult(reward=1.0 if oracle_ else 0.0, detail="")

    monkeypatch.setattr(probes_module, "run_oracle", oracle)
    monkeypatch.setattr(probes_module, "run_verifier", verifier)
    monkeypatch.setattr(stage, "task_image", image)
    monkeypatch.setitem(stage.MODES, "harbor", mode)
    monkeypatch.setitem(stage.MODES, "tb", mode)
    monkeypatch.setattr(stage, "Runtime", lambda: runtime)
    return runtime


def harbor_task(root: Path, name: str = "proj.op.0a1b2c3d4e") -> TaskDir:
    task = root / name
    for rel, text in {"task.toml": f'[task]\nname = "cligym/{name}"\n', "instruction.md": "Repair it.\n",
                      "environment/Dockerfile": "FROM gold\nRUN rm -f /x\n", "tests/test.sh": "#!/bin/sh\n",
                      "solution/solve.sh": "#!/bin/sh\ntouch /x\n"}.items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    return TaskDir(task)


# -- one task ----------------------------------------------------------------------------------


def test_each_probe_runs_in_its_own_container_honest_ones_after_the_oracle(fake, tmp_path):
    task = harbor_task(tmp_path / "tasks")
    result = stage.validate_task(fake, task, probes=battery(), digest=task_digest)
    assert result.ok and result.digest == task_digest(task) and result.probe_seconds is not None
    assert [p.probe for p in result.probes] == HONEST + CHEATS
    assert len(fake.sessions) == len(HONEST + CHEATS)  # oracle and nop are MODES (faked here)
    for session, probe in zip(fake.sessions, battery(), strict=True):
        assert session.image == "cligym/validate-task:1" and session.keepalive == probes_module.KEEPALIVE
        assert session.scripts == [probe.script]  # the probe's own script, once
        assert session.oracle == (probe.kind == "honest")  # cheats: nothing repaired
    honest = result.probes[0]
    assert honest.reward == 1 and honest.verdict == "cligym verifier: reward 1: all 3 listed tests passed"
    assert honest.script_exit == 0 and honest.script_output == "did it" and honest.ok
    assert all(p.reward == 0 and p.verdict.startswith("cligym verifier: reward 0: ") for p in result.probes[5:])


def test_a_cheat_that_scores_fails_the_task_with_its_verdict(fake, tmp_path):
    fake.verdicts = {"stdout_symlink": 1.0, "sweeper": 0.0}
    result = stage.validate_task(fake, harbor_task(tmp_path / "tasks"), probes=battery())
    assert not result.ok and result.oracle.reward == 1 and result.nop.reward == 0
    assert [p.probe for p in result.failed_probes] == ["sweeper", "stdout_symlink"]
    assert result.failed_probes[1].line() == (
        "probe stdout_symlink (cheat, must score 0): reward 1.0: cligym verifier: reward 1: all 3 listed tests passed")
    assert json.loads(result.model_dump_json())["ok"] is False


def test_a_probe_that_does_not_apply_is_skipped_and_a_broken_one_fails_alone(fake, tmp_path):
    skip = VerifierProbe("no_venv", "honest", "# no_venv\nexit 77 # always\n")
    fake.broken = frozenset({"reward_writer"})
    probes = [skip, *battery(["cheat"])]
    result = stage.validate_task(fake, harbor_task(tmp_path / "tasks"), probes=probes)
    first = result.probes[0]
    assert first.skipped and first.ok and first.reward is None and first.verdict == "does not apply to this image"
    broken = next(p for p in result.probes if p.probe == "reward_writer")
    assert broken.reward is None and not broken.ok and "\n" not in broken.verdict and "cannot start" in broken.verdict
    assert [p.probe for p in result.failed_probes] == ["reward_writer"]
    assert len(result.probes) == len(probes)  # the others still ran


def test_a_task_that_does_not_build_fails_every_probe(fake, tmp_path, monkeypatch):
    @contextmanager
    def no_image(runtime_, task, purpose):
        raise CligymError("the image does not build: RUN exited 1")
        yield  # pragma: no cover

    monkeypatch.setattr(stage, "task_image", no_image)
    result = stage.validate_task(fake, harbor_task(tmp_path / "tasks"), probes=battery())
    assert not result.ok and len(result.probes) == len(HONEST + CHEATS)
    assert {p.verdict for p in result.probes} == {"the image does not build: RUN exited 1"}


def test_without_probes_nothing_changes_and_tb_tasks_are_not_probed(fake, tmp_path):
    plain = stage.validate_task(fake, harbor_task(tmp_path / "tasks"))
    assert plain.ok and plain.probes is None and plain.probe_seconds is None and plain.digest is None
    tb = tmp_path / "tb" / "t"
    tb.mkdir(parents=True)
    (tb / "task.yaml").write_text("instruction: x\n")
    for name in ("Dockerfile", "run-tests.sh", "solution.sh"):
        (tb / name).write_text("x\n")
    (tb / "tests").mkdir()
    assert stage.validate_task(fake, TaskDir(tb), probes=battery()).probes is None
    assert not fake.sessions


def test_the_report_measures_the_probes_cost_per_task():
    def result(seconds):
        return TaskValidation(task="t", format="harbor", oracle=ModeResult(reward=1), nop=ModeResult(reward=0),
                              seconds=seconds + 5, probes=[], probe_seconds=seconds)

    report = ValidationReport.of("x", [result(10.0), result(20.0)])
    assert report.probe_seconds_per_task == 15.0 and report.all_ok
    assert ValidationReport.of("x", []).probe_seconds_per_task is None


# -- the command line --------------------------------------------------------------------------


@pytest.fixture()
def cli(fake, monkeypatch):
    monkeypatch.setattr(importlib.import_module("cligym.cli.app"), "reap_dead_runs", lambda quiet: None)

    def invoke(*args: str):
        return CliRunner().invoke(app, ["validate", *args], env={"COLUMNS": "250"})

    return invoke


def test_the_command_line_lists_a_failed_probe_and_exits_1(cli, fake, tmp_path):
    fake.verdicts = {"fake_tests": 1.0}
    harbor_task(tmp_path / "tasks", "a.op.0000000001")
    harbor_task(tmp_path / "tasks", "b.op.0000000002")
    proc = cli(str(tmp_path / "tasks"), "--probes", "-q")
    assert proc.exit_code == 1, proc.output
    assert "probes: " in proc.output and " s per task" in proc.output and "11/12" in proc.output
    assert ("a.op.0000000001: probe fake_tests (cheat, must score 0): reward 1.0: cligym verifier: reward 1: "
            "all 3 listed tests passed") in proc.output
    report = load(ValidationReport, tmp_path / "tasks.validate.json")
    assert report.ok == 0 and report.probe_seconds_per_task is not None
    assert all(r.digest and r.digest.startswith("sha256:") for r in report.results)

    fake.verdicts = {}
    proc = cli(str(tmp_path / "tasks"), "--probes", "--json")
    assert proc.exit_code == 0, proc.output
    rows = json.loads(proc.output)
    assert [len(r["probes"]) for r in rows] == [12, 12] and all(p["ok"] for r in rows for p in r["probes"])
    assert all(r["probe_seconds"] is not None for r in rows)


def test_the_command_line_runs_no_probe_unless_asked(cli, fake, tmp_path):
    harbor_task(tmp_path / "tasks")
    proc = cli(str(tmp_path / "tasks"), "-q")
    assert proc.exit_code == 0 and not fake.sessions and "probes" not in proc.output


# -- the dataset's records ---------------------------------------------------------------------


def _dataset(tmp_path: Path) -> DatasetDir:
    dataset = DatasetDir(tmp_path / "ds")
    dataset.path.mkdir()
    dataset.plan.write_text("{}")
    harbor_task(dataset.harbor.path, "a.op.0000000001")
    harbor_task(dataset.harbor.path, "b.op.0000000002")
    return dataset


def _probed(task: TaskDir, *, probes: list[ProbeResult] | None, digest: str | None = None) -> TaskValidation:
    return TaskValidation(task=task.name, format="harbor", oracle=ModeResult(reward=1), nop=ModeResult(reward=0),
                          seconds=1, digest=digest or task_digest(task), probes=probes,
                          probe_seconds=3.0 if probes is not None else None)


def test_a_datasets_harbor_folder_is_recognised(tmp_path):
    dataset = _dataset(tmp_path)
    assert dataset_of(dataset.harbor.path) == DatasetDir(dataset.path.resolve())
    assert dataset_of(tmp_path / "ds" / "projects") is None
    other = tmp_path / "tasks"
    harbor_task(other)
    assert dataset_of(other) is None


def test_probe_verdicts_belong_to_the_tasks_digest(tmp_path):
    dataset = _dataset(tmp_path)
    task = dataset.harbor.task("a.op.0000000001")
    verdict = ProbeResult(probe="fake_tests", kind="cheat", reward=1.0, verdict="cligym verifier: reward 1: ...")
    record(dataset, _probed(task, probes=[verdict]))
    assert current_probes(dataset, task.name) == [verdict]
    assert probe_figures(dataset, ["a.op.0000000001", "b.op.0000000002"]) == (1, ["a.op.0000000001"])

    # a later validation without probes of the same files keeps them; of other files, drops them
    kept = record(dataset, _probed(task, probes=None))
    assert kept.probes == [verdict] and not kept.ok
    assert load(TaskValidation, dataset.validation(task.name)).probes == [verdict]

    # the task changes (another export, an edited verifier): its probes say nothing about it
    task.test_sh.write_text("#!/bin/sh\necho changed\n")
    assert current_probes(dataset, task.name) is None
    assert probe_figures(dataset, [task.name]) == (0, [])
    fresh = record(dataset, _probed(task, probes=None))
    assert fresh.probes is None and fresh.ok


def test_merging_needs_both_digests_equal():
    def validation(digest, probes):
        return TaskValidation(task="t", format="harbor", oracle=ModeResult(reward=1), nop=ModeResult(reward=0),
                              seconds=1, digest=digest, probes=probes)

    probes = [ProbeResult(probe="sweeper", kind="honest", reward=1.0)]
    assert merged(validation("sha256:a", probes), validation("sha256:a", None)).probes == probes
    assert merged(validation("sha256:a", probes), validation("sha256:b", None)).probes is None
    assert merged(validation(None, probes), validation(None, None)).probes is None
    newer = [ProbeResult(probe="sweeper", kind="honest", reward=0.0)]
    assert merged(validation("sha256:a", probes), validation("sha256:a", newer)).probes == newer
    assert merged(None, validation("sha256:a", None)).probes is None


def test_validate_on_a_datasets_harbor_folder_writes_its_records(cli, fake, tmp_path):
    dataset = _dataset(tmp_path)
    proc = cli(str(dataset.harbor.path), "--probes", "-q")
    assert proc.exit_code == 0, proc.output
    for name in ("a.op.0000000001", "b.op.0000000002"):
        saved = load(TaskValidation, dataset.validation(name))
        assert saved.digest == task_digest(dataset.harbor.task(name)) and len(saved.probes) == 12
        assert current_probes(dataset, name) == saved.probes
    shutil.rmtree(dataset.harbor.task("b.op.0000000002").path)
    assert current_probes(dataset, "b.op.0000000002") is None
