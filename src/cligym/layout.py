"""Where everything lives on disk: one class per kind of directory, and no path literal
outside this module (``tests/unit/test_architecture.py`` checks it); record ids become path
components here and nowhere else, each checked first. A stage writes only into its own output
directory:

- ``GoldDir`` (``cligym gold``): gold.json, probe.json;
- ``RunDir`` (``cligym invert``, re-checked by ``cligym verify``): config.json, summary.json, verify.json,
  candidates/NNNN.json, tasks/<instance_id>/{instance,issues}.json, trajectories/NNNN.json, probe.json,
  registry.json (``cligym images push``);
- ``ExportDir`` (``cligym export``): one task directory per task, or a ``TaskTable`` (tasks.jsonl, its Parquet
  twin and card); its reports go *beside* it (``OUT.export.json``, ``OUT.validate.json``,
  ``OUT.registry.json``): Terminal-Bench 1.0's ``Dataset`` takes *every* entry of OUT as a task id, so even a
  dot-file there would be a broken task;
- ``TaskDir`` (one exported task), ``RolloutDir``, ``CurateDir``, ``DatasetDir`` (their commands').
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from cligym.errors import BadInput

if TYPE_CHECKING:
    from cligym.models.gold import GoldEnv

#: What a record id may look like where it becomes one path component.
SAFE_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+=@-]{0,199}$")


def safe_id(value: str, what: str = "id") -> str:
    """``value`` if it is one harmless path component (no separator, no ``..``), else BadInput."""
    if not SAFE_ID.fullmatch(value or "") or ".." in value:
        raise BadInput(f"refusing the {what} {value!r}: it must be one file name of letters, digits and ._+=@-")
    return value


@dataclass(frozen=True)
class GoldDir:  # what ``cligym gold`` writes
    path: Path

    @property
    def gold(self) -> Path:
        return self.path / "gold.json"

    @property
    def probe(self) -> Path:
        return self.path / "probe.json"

    def load(self) -> GoldEnv:
        from cligym.models.gold import GoldEnv
        from cligym.models.io import load

        if not self.path.is_dir():
            raise BadInput(f"{self.path} is not a directory (expected a gold dir made by 'cligym gold')")
        return load(GoldEnv, self.gold, "gold environment")


@dataclass(frozen=True)
class RunDir:  # what ``cligym invert`` writes (and ``cligym verify`` reports into)
    path: Path

    @property
    def config(self) -> Path:
        return self.path / "config.json"

    registry = property(lambda self: self.path / "registry.json", doc="its gold images' RegistryIndex")

    @property
    def summary(self) -> Path:
        return self.path / "summary.json"

    @property
    def verify_report(self) -> Path:
        return self.path / "verify.json"

    @property
    def probe(self) -> Path:
        return self.path / "probe.json"

    @property
    def candidates(self) -> Path:
        return self.path / "candidates"

    def candidate(self, attempt: int) -> Path:
        return self.candidates / f"{attempt:04d}.json"

    def candidate_records(self) -> dict[int, Path]:
        """Every saved candidate record (``candidate``'s names only), by attempt, in order."""
        numbered = {int(p.stem): p for p in self.candidates.glob("[0-9]*.json") if p.stem.isdecimal()}
        return {n: numbered[n] for n in sorted(numbered) if numbered[n] == self.candidate(n)}

    @property
    def tasks(self) -> Path:
        return self.path / "tasks"

    def task_dir(self, instance_id: str) -> Path:
        return self.tasks / safe_id(instance_id, "instance id")

    def instance(self, instance_id: str) -> Path:
        return self.task_dir(instance_id) / "instance.json"

    def issues(self, instance_id: str) -> Path:
        return self.task_dir(instance_id) / "issues.json"

    def instances(self) -> list[Path]:
        """Every saved task record, sorted."""
        return sorted(self.tasks.glob("*/instance.json"))

    def finished_attempts(self) -> int:
        """How many attempts have a candidate record (1 + the highest attempt number)."""
        return max(self.candidate_records(), default=-1) + 1

    def trajectory(self, attempt: int) -> str:
        """The degrading agent's ATIF file of an attempt, relative to the run directory."""
        return f"trajectories/{attempt:04d}.json"


@dataclass(frozen=True)
class TaskDir:  # one exported task: Harbor (task.toml …) or Terminal-Bench 1.0 (task.yaml …)
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    # Harbor
    @property
    def task_toml(self) -> Path:
        return self.path / "task.toml"

    @property
    def instruction(self) -> Path:
        return self.path / "instruction.md"

    @property
    def environment(self) -> Path:
        return self.path / "environment"

    @property
    def guard(self) -> Path:  # the verifier's guard, mounted read-only by the compose file below
        return self.environment / "guard"

    @property
    def harbor_compose(self) -> Path:  # Harbor merges it over its own compose files
        return self.environment / "docker-compose.yaml"

    @property
    def tests(self) -> Path:
        return self.path / "tests"

    @property
    def test_sh(self) -> Path:
        return self.tests / "test.sh"

    @property
    def busybox(self) -> Path:  # the static busybox the verifier runs under
        return self.tests / "bin" / "busybox"

    @property
    def reference(self) -> Path:  # the gold reference: gold's test files, fingerprint, the verifier's data
        return self.tests / "reference"

    @property
    def solution(self) -> Path:
        return self.path / "solution"

    @property
    def solve_sh(self) -> Path:
        return self.solution / "solve.sh"

    # Terminal-Bench 1.0
    @property
    def task_yaml(self) -> Path:
        return self.path / "task.yaml"

    @property
    def compose(self) -> Path:
        return self.path / "docker-compose.yaml"

    @property
    def run_tests_sh(self) -> Path:
        return self.path / "run-tests.sh"

    @property
    def solution_sh(self) -> Path:
        return self.path / "solution.sh"

    @property
    def selected_tests(self) -> Path:
        """The node ids the task's tests run, one a line."""
        return self.tests / "selected_tests.txt"

    @property
    def format(self) -> str | None:
        return "harbor" if self.task_toml.is_file() else "tb" if self.task_yaml.is_file() else None

    def require_format(self) -> str:
        """``format``, or BadInput when the directory is no exported task."""
        found = self.format
        if found is None:
            raise BadInput(f"{self.path} is neither a Harbor task (task.toml) nor a Terminal-Bench task (task.yaml)")
        return found

    @property
    def context(self) -> Path:
        """The directory the task's image builds from."""
        return self.environment if self.format == "harbor" else self.path

    @property
    def dockerfile(self) -> Path:  # written after task.toml or task.yaml, which say the format
        return self.context / "Dockerfile"


@dataclass(frozen=True)
class TaskTable:  # tasks.jsonl, and its rows as the Hub lays out a dataset: Parquet, and the card naming it
    path: Path

    @property
    def jsonl(self) -> Path:
        return self.path / "tasks.jsonl"

    @property
    def parquet(self) -> Path:
        return self.path / "data" / "train-00000-of-00001.parquet"

    @property
    def card(self) -> Path:
        return self.path / "README.md"


@dataclass(frozen=True)
class ExportDir(TaskTable):
    """What ``cligym export`` writes: task directories, or a task table."""

    #: where ``cligym export`` writes when not told (and the demo, inside its output)
    DEFAULT: ClassVar[Path] = Path("tasks")

    def task(self, instance_id: str) -> TaskDir:
        return TaskDir(self.path / safe_id(instance_id, "instance id"))

    @property
    def report(self) -> Path:
        """The ExportReport, beside the directory (see the module docstring for why)."""
        return self._beside("export.json")

    @property
    def validation(self) -> Path:
        """Where ``cligym validate`` saves its ValidationReport by default, beside the directory."""
        return self._beside("validate.json")

    registry = property(lambda self: self._beside("registry.json"), doc="its gold images' RegistryIndex, beside it")

    def _beside(self, suffix: str) -> Path:
        here = Path(os.path.abspath(self.path))
        if not here.name:
            raise BadInput(f"{self.path} cannot hold exported tasks (no room beside it for the reports)")
        return here.parent / f"{here.name}.{suffix}"

    def is_empty(self) -> bool:
        return not self.path.exists() or (self.path.is_dir() and not any(self.path.iterdir()))

    def task_dirs(self) -> list[TaskDir]:
        """The exported tasks in this directory, sorted (BadInput when there are none)."""
        if not self.path.is_dir():
            raise BadInput(f"{self.path} is not a directory of exported tasks")
        dirs = sorted((TaskDir(p) for p in self.path.iterdir() if p.is_dir()), key=lambda t: t.name)
        dirs = [d for d in dirs if d.format is not None]
        if not dirs:
            raise BadInput(f"{self.path} holds no exported tasks (no */task.toml or */task.yaml)")
        return dirs


@dataclass(frozen=True)
class RolloutDir:  # what ``cligym rollout`` writes
    path: Path

    def attempt(self, task: str, attempt: int) -> Path:
        return self.path / safe_id(task, "task name") / f"{attempt:03d}"

    def trajectory(self, task: str, attempt: int) -> Path:
        return self.attempt(task, attempt) / "trajectory.json"

    def result(self, task: str, attempt: int) -> Path:
        return self.attempt(task, attempt) / "result.json"

    @property
    def summary(self) -> Path:
        return self.path / "summary.json"

    def attempt_dirs(self) -> list[Path]:
        """Every ``<task>/<attempt>`` folder, sorted."""
        return sorted(p for p in self.path.glob("*/*") if p.is_dir())

    @staticmethod
    def records_in(folder: Path) -> tuple[Path, Path]:  # trajectory and result of an attempt folder
        return folder / "trajectory.json", folder / "result.json"


@dataclass(frozen=True)
class CurateDir:  # what ``cligym curate`` writes
    path: Path

    @property
    def sft(self) -> Path:
        return self.path / "sft.jsonl"

    @property
    def summary(self) -> Path:
        return self.path / "summary.json"


@dataclass(frozen=True)
class DemoDir:  # what ``cligym demo`` writes: gold, run, a Harbor export and a report, side by side
    path: Path

    @property
    def gold(self) -> Path:
        return self.path / "gold"

    @property
    def run(self) -> Path:
        return self.path / "run"

    @property
    def tasks(self) -> Path:
        return self.path / ExportDir.DEFAULT

    @property
    def report(self) -> Path:
        return self.path / "report"


@dataclass(frozen=True)
class DatasetDir(TaskTable):
    """What ``cligym dataset build`` writes: projects/<key>/{gold,run,export-*}, harbor/, the
    task table, gold image bundle, ledger, plan, summary and validation/<task>.json."""

    @property
    def plan(self) -> Path:
        return self.path / "plan.json"

    @property
    def ledger(self) -> Path:
        return self.path / "ledger.sqlite"

    @property
    def summary(self) -> Path:
        return self.path / "summary.json"

    @property
    def harbor(self) -> ExportDir:
        return ExportDir(self.path / "harbor")

    registry = property(lambda self: self.path / "registry.json", doc="its gold images' RegistryIndex")

    @property
    def manifest(self) -> Path:
        return self.harbor.path / "dataset.toml"

    @property
    def bundle(self) -> Path:
        return self.path / "gold-images.tar"

    @property
    def projects(self) -> Path:
        return self.path / "projects"

    def project(self, key: str) -> Path:
        return self.projects / safe_id(key, "project key")

    def project_keys(self) -> list[str]:
        """The keys of the projects that have a folder here, sorted."""
        return sorted(p.name for p in self.projects.glob("*") if p.is_dir())

    def gold(self, key: str) -> Path:
        return self.project(key) / "gold"

    def run(self, key: str) -> Path:
        return self.project(key) / "run"

    def staging(self, key: str, fmt: str) -> Path:
        """Where a project's tasks are exported before they join the dataset."""
        return self.project(key) / f"export-{safe_id(fmt, 'format')}"

    def validation(self, task: str) -> Path:
        return self.validations / f"{safe_id(task, 'task name')}.json"

    @property
    def validations(self) -> Path:
        return self.path / "validation"

    def validation_records(self) -> list[Path]:
        """Every saved task validation, sorted."""
        return sorted(self.validations.glob("*.json"))

    def unit_file(self, key: str, suffix: str) -> Path:  # a worker's result (json) or log
        return self.path / "units" / f"{safe_id(key.replace('/', '__'), 'unit key')}.{suffix}"
