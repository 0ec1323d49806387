"""Where everything lives on disk: one class per kind of directory, and no path literal
outside this module (``tests/unit/test_architecture.py`` checks it); record ids become path
components here and nowhere else, each checked first. A stage writes only into its own output
directory:

- ``GoldDir`` (``cligym gold``): gold.json, probe.json (probe-debian.json for a Debian package);
- ``RunDir`` (``cligym invert``, re-checked by ``cligym verify``): config.json, summary.json, verify.json,
  candidates/NNNN.json, tasks/<instance_id>/{instance,issues}.json, trajectories/NNNN.json, probe.json,
  registry.json (``cligym images push``), references/ (``ReferenceStore``);
- ``ExportDir`` (``cligym export``): one task directory per task, or a ``TaskTable`` (tasks.jsonl, its Parquet
  twin and card); its reports go *beside* it (``OUT.export.json``, ``OUT.validate.json``,
  ``OUT.registry.json``): Terminal-Bench 1.0's ``Dataset`` takes *every* entry of OUT as a task id, so even a
  dot-file there would be a broken task;
- ``TaskDir`` (one exported task), ``RolloutDir``, ``CurateDir``, ``DatasetDir`` (their commands').
- ``HarborJobDir`` and ``HarborTrialDir``: what ``harbor run`` writes, read by ``cligym curate``.
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


class _At:
    """A path of a directory class: ``name`` below the directory's ``under`` (its own path)."""

    def __init__(self, name: str, under: str = "path") -> None:
        self.name, self.under = name, under

    def __get__(self, directory: object, owner: type | None = None) -> Path:
        return getattr(directory, self.under) / self.name


@dataclass(frozen=True)
class GoldDir:  # what ``cligym gold`` writes
    path: Path

    gold = _At("gold.json")
    probe = _At("probe.json")
    probe_debian = _At("probe-debian.json")  # a Debian package's (cligym.models.debian_probe)

    def load(self) -> GoldEnv:
        from cligym.models.gold import GoldEnv
        from cligym.models.io import load

        if not self.path.is_dir():
            raise BadInput(f"{self.path} is not a directory (expected a gold dir made by 'cligym gold')")
        return load(GoldEnv, self.gold, "gold environment")


@dataclass(frozen=True)
class ReferenceStore:  # the gold references a run read (``cligym.harness.reference.gather``), by a hash of their source
    path: Path

    def record(self, key: str) -> Path:  # gzipped, as the tar
        return self.path / f"{safe_id(key, 'reference key')}.json.gz"

    def pristine(self, key: str) -> Path:
        return self.path / f"{safe_id(key, 'reference key')}.tar.gz"


@dataclass(frozen=True)
class RunDir:  # what ``cligym invert`` writes (and ``cligym verify`` reports into)
    path: Path

    config = _At("config.json")
    registry = _At("registry.json")  # its gold images' RegistryIndex
    summary = _At("summary.json")
    verify_report = _At("verify.json")
    probe = _At("probe.json")
    probe_debian = _At("probe-debian.json")  # a Debian gold's, when its gold folder had none
    flaky = _At("flaky.json")  # gold tests found flaky on the way (models.run.FlakyTests)
    candidates = _At("candidates")
    tasks = _At("tasks")

    @property
    def references(self) -> ReferenceStore:
        return ReferenceStore(self.path / "references")

    def candidate(self, attempt: int) -> Path:
        return self.candidates / f"{attempt:04d}.json"

    def candidate_records(self) -> dict[int, Path]:
        """Every saved candidate record (``candidate``'s names only), by attempt, in order."""
        numbered = {int(p.stem): p for p in self.candidates.glob("[0-9]*.json") if p.stem.isdecimal()}
        return {n: numbered[n] for n in sorted(numbered) if numbered[n] == self.candidate(n)}

    def task_dir(self, instance_id: str) -> Path:
        return self.tasks / safe_id(instance_id, "instance id")

    def task_record(self, instance_id: str) -> Path:
        return self.task_dir(instance_id) / "instance.json"

    def issues(self, instance_id: str) -> Path:
        return self.task_dir(instance_id) / "issues.json"

    def task_records(self) -> list[Path]:
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
    task_toml = _At("task.toml")
    instruction = _At("instruction.md")
    environment = _At("environment")
    guard = _At("guard", under="environment")  # the verifier's guard, mounted read-only by the compose file
    harbor_compose = _At("docker-compose.yaml", under="environment")  # Harbor merges it over its own
    tests = _At("tests")
    test_sh = _At("test.sh", under="tests")
    busybox = _At("bin/busybox", under="tests")  # the static busybox the verifier runs under
    solution = _At("solution")
    solve_sh = _At("solve.sh", under="solution")
    # Terminal-Bench 1.0
    task_yaml = _At("task.yaml")
    compose = _At("docker-compose.yaml")
    run_tests_sh = _At("run-tests.sh")
    solution_sh = _At("solution.sh")
    selected_tests = _At("selected_tests.txt", under="tests")  # the node ids the task's tests run, one a line

    @property
    def reference(self) -> ReferenceDir:
        return ReferenceDir(self.tests / "reference")

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

    dockerfile = _At("Dockerfile", under="context")  # written after task.toml or task.yaml, which name the format


@dataclass(frozen=True)
class ReferenceDir:
    """A task's tests/reference, the gold reference its verifier trusts: gold's test files,
    fingerprint and the verifier's scripts. verifier.sh sources ``env`` from beside itself;
    every other file it reads by the path ``env`` gives it in a variable (``SHELL``)."""

    path: Path

    #: The files the verifier's shell reads, by the variable of task.env holding each path
    #: (R_SHADOW: one file per line of shadow-dirs.txt, ``@`` standing for its number).
    SHELL: ClassVar[dict[str, str]] = {
        "R_FUNCS": "fingerprint.sh", "R_SWEEP": "sweep.sh", "R_VERDICT": "verdict.sh", "R_JUDGE": "judge.awk",
        "R_TAR": "pristine.tar",
        "R_ARGS": "pytest-args.txt", "R_TESTS": "tests.txt", "R_KEYS": "keys.tsv", "R_PRISTINE": "pristine.txt",
        "R_FOREIGN": "foreign.txt", "R_CONFTESTS": "conftests.txt", "R_SPEC": "spec.txt",
        "R_FINGERPRINT": "fingerprint.txt", "R_WORKDIR": "workdir.txt", "R_PACKAGES": "package-dirs.txt",
        "R_ELF": "elf.txt", "R_RESOLVED": "resolved.txt", "R_PROTECTED": "protected.txt",
        "R_KEEPALIVE": "keepalive.txt", "R_PIP": "pip-config.txt", "R_BYTECODE": "bytecode.txt",
        "R_SHADOWS": "shadow-dirs.txt",
        "R_SHADOW": "shadow-@.txt",
    }

    def shell(self, variable: str) -> Path:
        return self.path / self.SHELL[variable]

    def shadow(self, number: int) -> Path:  # R_SHADOW of the NUMBERth folder of shadow-dirs.txt
        return self.path / self.SHELL["R_SHADOW"].replace("@", str(number))

    env = _At("task.env")  # the task's values, sourced by the verifier
    verifier = _At("verifier.sh")
    record = _At("reference.json")  # the GoldReference


@dataclass(frozen=True)
class TaskTable:  # tasks.jsonl, and its rows as the Hub lays out a dataset: Parquet, and the card naming it
    path: Path

    jsonl = _At("tasks.jsonl")
    parquet = _At("data/train-00000-of-00001.parquet")
    card = _At("README.md")


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
        return self.records_in(self.attempt(task, attempt))[0]

    def result(self, task: str, attempt: int) -> Path:
        return self.records_in(self.attempt(task, attempt))[1]

    summary = _At("summary.json")

    def attempt_dirs(self) -> list[Path]:
        """Every ``<task>/<attempt>`` folder, sorted."""
        return sorted(p for p in self.path.glob("*/*") if p.is_dir())

    @staticmethod
    def records_in(folder: Path) -> tuple[Path, Path]:  # trajectory and result of an attempt folder
        return folder / "trajectory.json", folder / "result.json"


@dataclass(frozen=True)
class CurateDir:  # what ``cligym curate`` writes
    path: Path

    sft = _At("sft.jsonl")
    summary = _At("summary.json")


@dataclass(frozen=True)
class HarborTrialDir:  # one trial of a Harbor job, as Harbor's ``TrialPaths`` lays it out (``cligym curate`` reads it)
    path: Path

    config = _At("config.json")  # written when the trial starts
    result = _At("result.json")  # Harbor's TrialResult, written when it ends
    agent = _At("agent")  # the container's /logs/agent
    trajectory = _At("trajectory.json", "agent")  # ATIF, when the agent writes one
    steps = _At("steps")  # a multi-step trial's steps/<step>/{agent,verifier}


@dataclass(frozen=True)
class HarborJobDir:  # what ``harbor run -o JOBS`` writes as JOBS/<job>: config.json, result.json, one folder per trial
    path: Path

    config = _At("config.json")
    result = _At("result.json")

    def trial_dirs(self) -> list[Path]:
        """Every folder holding a config.json, sorted: the trials (a reader tells a trial's
        config from a job's, which a folder of jobs holds)."""
        if not self.path.is_dir():
            return []
        return sorted(p for p in self.path.iterdir() if p.is_dir() and HarborTrialDir(p).config.is_file())


@dataclass(frozen=True)
class DemoDir:  # what ``cligym demo`` writes: gold, run, a Harbor export and a report, side by side
    path: Path

    gold = _At("gold")
    run = _At("run")
    report = _At("report")

    @property
    def tasks(self) -> Path:
        return self.path / ExportDir.DEFAULT


@dataclass(frozen=True)
class DatasetDir(TaskTable):
    """What ``cligym dataset build`` writes: projects/<key>/{gold,run,export-*}, harbor/, the
    task table, gold image bundle, ledger, plan, summary, validation/<task>.json and
    left-out/<task> (validated tasks the mix leaves out)."""

    plan = _At("plan.json")
    ledger = _At("ledger.sqlite")
    summary = _At("summary.json")
    registry = _At("registry.json")  # its gold images' RegistryIndex
    bundle = _At("gold-images.tar")
    projects = _At("projects")
    validations = _At("validation")
    #: validated Harbor tasks the dataset's mix leaves out (``cligym.dataset.mix``)
    left_out = _At("left-out")

    @property
    def harbor(self) -> ExportDir:
        return ExportDir(self.path / "harbor")

    @property
    def manifest(self) -> Path:
        return self.harbor.path / "dataset.toml"

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

    def validation_records(self) -> list[Path]:
        """Every saved task validation, sorted."""
        return sorted(self.validations.glob("*.json"))

    def unit_file(self, key: str, suffix: str) -> Path:  # a worker's result (json) or log
        return self.path / "units" / f"{safe_id(key.replace('/', '__'), 'unit key')}.{suffix}"
