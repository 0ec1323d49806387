"""The validate stage: run exported tasks the way a harness does, as oracle and as nop.

Each task's environment is built once; then, in a fresh container per mode (both at
once), the oracle runs the task's solution and then its verifier (reward must be 1), and
nop runs the verifier alone (reward must be 0). How each harness runs a task lives in
:mod:`cligym.harness.trial`. The report of the whole export is saved as JSON beside the
export directory (``ExportDir.validation``) unless the caller names another file.

With probes (``validate --probes``, Harbor tasks), each probe of :mod:`cligym.validate.probes`
runs as well; a task that fails one fails, and the seconds the probes take are recorded.

A task that cannot be run (a file its harness needs is missing, its image does not build,
the engine refuses a step) is recorded as failed with a one-line detail and the others
still run; only the loss of the engine, or an interruption, stops the stage.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from cligym.errors import CligymError, Fatal
from cligym.harness.images import at_once
from cligym.harness.trial import (
    agent_session,
    run_oracle,
    run_tb_solution,
    run_tb_tests,
    run_verifier,
    run_verifier_on_image,
    task_image,
)
from cligym.layout import ExportDir, TaskDir
from cligym.models.io import save
from cligym.models.validate import (
    ModeResult,
    ProbeResult,
    TaskValidation,
    ValidationReport,
)
from cligym.runtime import ImageKind, Runtime
from cligym.ui import Reporter
from cligym.validate.probes import VerifierProbe, not_run, run_probe


def _harbor_mode(runtime: Runtime, tag: str, task: TaskDir, oracle: bool) -> ModeResult:
    if not oracle:  # the verifier in a container in which nothing ran: what its successor would hold
        return run_verifier_on_image(runtime, tag, task)
    with agent_session(runtime, tag, task) as session:
        fixed = run_oracle(session, task)
        if fixed.exit_code != 0:
            return ModeResult(reward=None, detail=f"solve.sh exited {fixed.exit_code}: {fixed.output[-300:]!r}")
        return run_verifier(session, task)


def _tb_mode(runtime: Runtime, tag: str, task: TaskDir, oracle: bool) -> ModeResult:
    with runtime.session(tag) as session:
        if oracle:
            fixed = run_tb_solution(session, task)
            if fixed.exit_code != 0:
                return ModeResult(reward=None, detail=f"solution.sh exited {fixed.exit_code}")
        return run_tb_tests(session, task)


#: How each export format is run: (runtime, task image, task, as the oracle?) -> the reward,
#: each in a fresh container of the task's image.
MODES: dict[str, Callable[[Runtime, str, TaskDir, bool], ModeResult]] = {"harbor": _harbor_mode, "tb": _tb_mode}

#: What each format's harness reads from a task directory before it can run it.
REQUIRED: dict[str, Callable[[TaskDir], list[Path]]] = {
    "harbor": lambda t: [t.dockerfile, t.test_sh, t.solve_sh],
    "tb": lambda t: [t.dockerfile, t.run_tests_sh, t.solution_sh, t.tests],
}


def missing_files(task: TaskDir, fmt: str) -> list[str]:
    """The files (relative to the task) its harness needs and does not find."""
    return [str(p.relative_to(task.path)) for p in REQUIRED[fmt](task) if not p.exists()]


def validate_task(runtime: Runtime, task_dir: TaskDir | Path, *, probes: Sequence[VerifierProbe] = (),
                  digest: Callable[[TaskDir], str] | None = None) -> TaskValidation:
    """One task as the oracle and as nop, then ``probes`` (Harbor tasks only); ``digest``
    gives the task's content digest, recorded with the result. A task that cannot be run is a
    failed result, not an error."""
    task = task_dir if isinstance(task_dir, TaskDir) else TaskDir(Path(task_dir))
    fmt = task.require_format()
    started = time.monotonic()
    missing = missing_files(task, fmt)
    wanted = list(probes) if fmt == "harbor" else []
    probed: list[ProbeResult] | None = None
    probe_seconds: float | None = None
    try:
        if missing:
            raise CligymError(f"the task lacks {', '.join(missing)}")
        with task_image(runtime, task, ImageKind.VALIDATE) as tag:
            # the oracle's and nop's containers at once: neither sees the other's
            results = at_once(runtime, [lambda oracle=oracle: MODES[fmt](runtime, tag, task, oracle)
                                        for oracle in (True, False)])
            if wanted:
                probing = time.monotonic()
                probed = [run_probe(runtime, tag, task, probe) for probe in wanted]
                probe_seconds = round(time.monotonic() - probing, 1)
    except Fatal:
        raise  # the engine is gone: no later task can run either
    except (CligymError, OSError) as exc:  # OSError: a task file that cannot be read
        why = " ".join(str(exc).split()) if isinstance(exc, CligymError) else f"cannot read the task: {exc}"
        failed = ModeResult(reward=None, detail=why[:300])
        results = [failed, failed]
        probed = not_run(wanted, failed.detail) if wanted else None
    return TaskValidation(task=task.name, format=fmt, oracle=results[0], nop=results[1],
                          seconds=time.monotonic() - started, digest=_digest_of(task, digest), probes=probed,
                          probe_seconds=probe_seconds)


def _digest_of(task: TaskDir, digest: Callable[[TaskDir], str] | None) -> str | None:
    if digest is None:
        return None
    try:
        return digest(task)
    except OSError:
        return None


def validate(
    tasks_dir: Path,
    *,
    runtime: Runtime | None = None,
    reporter: Reporter | None = None,
    report_path: Path | None = None,
    label: str = "validating tasks",
    probes: Sequence[VerifierProbe] = (),
    digest: Callable[[TaskDir], str] | None = None,
) -> ValidationReport:
    """Every task of an export (and ``probes`` on each Harbor task), saved as a
    ValidationReport (by default beside the export)."""
    export = ExportDir(Path(tasks_dir))
    tasks = export.task_dirs()
    runtime = runtime or Runtime()
    reporter = reporter or Reporter()
    results = []
    with reporter.task(label, total=len(tasks)):
        for task in tasks:
            results.append(validate_task(runtime, task, probes=probes, digest=digest))
            reporter.advance()
    report = ValidationReport.of(str(export.path), results)
    save(report, report_path or export.validation)
    return report

