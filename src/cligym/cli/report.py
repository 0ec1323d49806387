"""``cligym report``: the statistics of what cligym made, as JSON and one HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cligym.cli.app import JsonReport, out, print_json, print_pairs, writable_output


def report(
    paths: Annotated[list[Path], typer.Argument(
        help="Gold, run, export, rollout, curate or demo directories, or a dataset directory (any mix).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where report.json and index.html go.")],
    as_json: JsonReport = False,
) -> None:
    """Aggregate statistics as OUT/report.json and OUT/index.html (charts inline, no network).

    The page sets the dataset beside the CLI-Gym paper's figures (instances, images, issue
    length, Dockerfile lines, FAIL_TO_PASS / PASS_TO_PASS, tokens, storage) and shows each
    project, categories and operators, distributions, the funnel from attempts to kept
    trajectories, rollout pass rates and a table of every task with links to its files.
    """
    from cligym.report import ReportDir, make_report

    writable_output(output, what="report directory")
    result = make_report(paths, output)
    if as_json:
        print_json(result, by_alias=True)
        return
    funnel = ", ".join(f"{k} {v}" for k, v in result.funnel.items())
    print_pairs("report", [("tasks", str(len(result.tasks))), ("projects", str(len(result.projects))),
                           ("funnel", funnel), ("page", str(ReportDir(output).html))])
    out.print(f"open {ReportDir(output).html} in a browser")
