"""``cligym validate``: run every exported task as the oracle and as nop, and with
``--probes`` through the verifier probes (honest repairs must score 1, cheats 0); the report
is saved as JSON (by default beside the export directory, ``ExportDir.validation``), and
for a dataset's ``DIR/harbor`` in the dataset's validation records too."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cligym.cli.app import JsonResults, Quiet, err, out, print_json, print_table, stage_reporter, writable_output


def validate(
    tasks_dir: Annotated[Path, typer.Argument(help="A directory of exported Harbor or Terminal-Bench tasks.")],
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Where the JSON report goes (default: TASKS_DIR.validate.json beside it)."),
    ] = None,
    probes: Annotated[bool, typer.Option(
        "--probes", help="Also run the verifier probes on every Harbor task, each in a fresh container: honest "
                         "repairs after the oracle (reward must be 1) and generic cheats (reward must be 0).")] = False,
    as_json: JsonResults = False,
    quiet: Quiet = False,
) -> None:
    """Run every exported task as the oracle (reward must be 1) and as nop (reward must be 0).

    With --probes, every Harbor task also runs the probe batteries; a task that fails a
    probe fails. A task that cannot be run (a missing file, an image that does not build)
    counts as failed and the others still run; the exit code is 1 when any task failed.
    """
    from cligym.dataset.manifest import task_digest
    from cligym.dataset.records import dataset_of, record
    from cligym.layout import ExportDir
    from cligym.validate import validate as run_validate
    from cligym.validate.probes import battery

    ExportDir(tasks_dir).task_dirs()  # bad input fails here, before the progress display starts
    writable_output(output or ExportDir(tasks_dir).validation, what="validation report", directory=False)
    with stage_reporter(quiet or as_json) as progress:
        report = run_validate(tasks_dir, reporter=progress, report_path=output, probes=battery() if probes else (),
                              digest=task_digest)
    if (dataset := dataset_of(tasks_dir)) is not None:
        for result in report.results:
            record(dataset, result)
    results = report.results
    if as_json:
        print_json([r.model_dump() for r in results])
    else:
        _print(report, probes)
    for r in results:  # on stderr, with --json too
        if r.oracle.reward != 1 or r.nop.reward != 0:
            err.print(f"{r.task}: oracle {r.oracle.reward} ({r.oracle.detail}) nop {r.nop.reward} ({r.nop.detail})",
                      markup=False, soft_wrap=True)
        for probe in r.failed_probes:  # one line each, whatever the terminal's width
            err.print(f"{r.task}: {probe.line()}", markup=False, soft_wrap=True)
    if not report.all_ok:
        raise typer.Exit(1)


def _print(report, probes: bool) -> None:
    results = report.results
    columns = ("task", "oracle", "nop", *(("probes", "probe s") if probes else ()), "ok", "seconds")
    rows = []
    for r in results:
        passed = f"{sum(p.ok for p in r.probes)}/{len(r.probes)}" if r.probes is not None else "-"
        cost = f"{r.probe_seconds:.1f}" if r.probe_seconds is not None else "-"
        rows.append([r.task, str(r.oracle.reward), str(r.nop.reward), *((passed, cost) if probes else ()),
                     "yes" if r.ok else "NO", f"{r.seconds:.1f}"])
    print_table(f"validation of {len(results)} tasks", columns, rows)
    if probes:
        cost = report.probe_seconds_per_task
        out.print(f"probes: {cost:.1f} s per task" if cost is not None else "probes: none ran (Harbor tasks only)",
                  markup=False, highlight=False)
