"""``cligym demo``: the whole pipeline on a real PyPI project with built-in defaults."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cligym.cli.app import JsonSummary, cost_text, counts, print_json, print_pairs, stage_reporter, writable_output
from cligym.errors import CligymError

DEMO_PROJECT = "markupsafe==3.0.2"


def _pipeline(output: Path, project: str, attempts: int, seed: int, quiet: bool):
    from cligym.issue import write_missing_issues
    from cligym.export.stage import export as run_export
    from cligym.gold import make_gold
    from cligym.invert import invert as run_invert
    from cligym.layout import DemoDir
    from cligym.report import make_report
    from cligym.runtime import Runtime
    from cligym.validate import validate as run_validate

    demo_dir = DemoDir(output)
    gold_dir, run_dir, tasks_dir = demo_dir.gold, demo_dir.run, demo_dir.tasks
    with stage_reporter(quiet) as progress:
        runtime = Runtime()
        record = make_gold(project, gold_dir, runtime=runtime, reporter=progress)
        summary = run_invert(gold_dir, run_dir, attempts=attempts, seed=seed, runtime=runtime, reporter=progress)
        if summary.verified == 0:
            raise CligymError("the demo made no verified task; try more attempts (-n)")
        write_missing_issues(run_dir)
        run_export(run_dir, "harbor", tasks_dir, force=True, runtime=runtime)
        report = run_validate(tasks_dir, runtime=runtime, reporter=progress,
                              label="validating the exported tasks (oracle and nop)")
    make_report([gold_dir, run_dir, tasks_dir], demo_dir.report)
    return record, summary, report, tasks_dir


def demo(
    output: Annotated[Path, typer.Option(
        "-o", "--output", help="Where the demo writes its records.")] = Path("demo-out"),
    project: Annotated[str, typer.Option(help="The PyPI project the demo starts from.")] = DEMO_PROJECT,
    attempts: Annotated[int, typer.Option("-n", "--attempts", help="Inversion attempts.")] = 12,
    seed: Annotated[int, typer.Option(help="Seed of the inversion.")] = 0,
    as_json: JsonSummary = False,
) -> None:
    """Run the whole pipeline on a real PyPI project with built-in defaults.

    gold → invert (built-in operators, no LLM) → export (Harbor) → validate (oracle and
    nop) → report (OUTPUT/report/index.html), then a one-screen summary. Running it again
    reuses and resumes what is there.
    """
    from cligym.layout import DemoDir
    from cligym.report import ReportDir

    writable_output(output, what="demo directory")
    record, summary, report, tasks_dir = _pipeline(output, project, attempts, seed, as_json)
    results = report.results
    data = {
        "project": record.source.spec, "gold_tests": len(record.tests), "attempts": summary.attempts,
        "verified": summary.verified, "yield": summary.yield_, "per_category": summary.per_category,
        "discard_reasons": summary.discard_reasons, "seconds_per_verified": summary.seconds_per_verified,
        "cost_ratio": summary.cost_ratio,
        "tasks_dir": str(tasks_dir), "validated": report.ok, "validation_failed": len(results) - report.ok,
        "oracle_rewards": [r.oracle.reward for r in results], "nop_rewards": [r.nop.reward for r in results],
        "report": str(ReportDir(DemoDir(output).report).html),
    }
    if as_json:
        print_json(data)
    else:
        rows = [
            ("gold tests", f"{len(record.tests)} pass on every one of {record.runs} runs"),
            ("attempts", str(summary.attempts)),
            ("verified tasks", f"{summary.verified} (yield {summary.yield_:.0%})"),
            ("categories", counts(summary.per_category)),
            ("discarded", counts(summary.discard_reasons)),
        ]
        if summary.seconds_per_verified is not None:
            rows.append(("seconds per verified task", cost_text(summary)))
        rows.append(("oracle / nop", f"{sum(r.oracle.reward == 1 for r in results)}/{len(results)} oracle reward 1, "
                                     f"{sum(r.nop.reward == 0 for r in results)}/{len(results)} nop reward 0"))
        rows.append(("Harbor tasks", str(tasks_dir)))
        rows.append(("report", data["report"]))
        print_pairs(f"cligym demo: {record.source.spec}", rows)
    if not report.all_ok:
        raise typer.Exit(1)
