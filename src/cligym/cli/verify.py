"""``cligym verify``: re-check every task of a run from scratch. The verify stage saves the
report in the run directory (``RunDir.verify_report``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cligym.cli.app import JsonResults, print_json, print_table, stage_reporter


def verify(
    run_dir: Annotated[Path, typer.Argument(help="A run directory made by 'cligym invert'.")],
    gold_dir: Annotated[Path, typer.Option("--gold", help="The gold directory the run was made from.")],
    as_json: JsonResults = False,
) -> None:
    """Re-check every task of a run from scratch.

    A fresh build of gold + ΔD must fail exactly F2P twice with nothing done, the leak
    scan must be clean, and the solution must make F2P and P2P pass.
    """
    from cligym.verify import recheck_run

    with stage_reporter(False, as_json) as progress:
        report = recheck_run(run_dir, gold_dir, reporter=progress)
    if as_json:
        print_json([check.model_dump() for check in report.tasks])
    else:
        print_table("verification", ("instance", "ok", "reason"),
                    ([c.instance_id, "yes" if c.ok else "NO", c.reason] for c in report.tasks))
    if report.ok != report.checked:
        raise typer.Exit(1)
