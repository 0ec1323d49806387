"""``cligym export``: verified tasks as Harbor or Terminal-Bench 1.0 task dirs, or JSONL.

Before exporting, the issue stage writes the issue texts of tasks that have none yet
(run directories made before the invert stage wrote them)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from cligym.cli.app import ApiKeyEnv, BaseUrl, ModelConfigFile, ModelName, model_client, out, print_json
from cligym.errors import BadInput
from cligym.export.registry import formats_help, get_exporter
from cligym.layout import ExportDir


def export(
    run_dir: Annotated[Path, typer.Argument(help="A run directory made by 'cligym invert'.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help=formats_help())] = "harbor",
    output: Annotated[Path, typer.Option(
        "-o", "--output", help="Where the tasks go (must be empty unless --force).")] = ExportDir.DEFAULT,
    hint: Annotated[bool, typer.Option("--hint/--no-hint", help="Put the hint paragraph in the instruction.")] = False,
    style: Annotated[Optional[str], typer.Option(
        help="Issue text guidance: strong, balanced, weak, or seeded (each task's own, chosen by --seed; the "
             "default with --issue-writer llm, else strong).")] = None,
    issue_writer: Annotated[str, typer.Option(help="Who writes issue texts: template (offline) or llm (one "
                                                   "style per task, checked like a template's).")] = "template",
    seed: Annotated[int, typer.Option(help="--issue-writer llm: the seed that picks each task's style.")] = 0,
    model: ModelName = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    model_config: ModelConfigFile = None,
    force: Annotated[bool, typer.Option(help="Replace a non-empty output directory.")] = False,
    offline_only: Annotated[bool, typer.Option(
        "--offline-only/--with-network",
        help="Export only offline-fair tasks (repairable with what is in the image), or also the others, "
             "with network access and marked so.")] = True,
    min_difficulty: Annotated[Optional[str], typer.Option(
        help="Export only tasks whose measured difficulty is at least this: easy, medium or hard (easy < medium "
             "< hard); above easy, tasks without a measure are left out too.")] = None,
    registry: Annotated[Optional[str], typer.Option(
        help="HOST:PORT of an OCI registry: every task builds FROM its gold image there, pinned by digest "
             "(pushed first where the registry lacks it), so it runs on any engine that can reach the "
             "registry.")] = None,
    task_images: Annotated[bool, typer.Option(
        "--task-images",
        help="With --registry (Harbor format): also build and push each task's image, named by digest in "
             "task.toml's [environment] docker_image for backends that cannot build.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the export report as JSON.")] = False,
) -> None:
    """Export verified tasks as Harbor or Terminal-Bench 1.0 task dirs, or a JSONL dataset."""
    from cligym.export.common import check_min_difficulty
    from cligym.export.stage import export as run_export
    from cligym.issue import write_missing_issues
    from cligym.models.registry import registry_name
    from cligym.runtime import Runtime

    exporter = get_exporter(fmt)
    check_min_difficulty(min_difficulty)
    registry = registry_name(registry) if registry else None
    if issue_writer not in ("template", "llm"):
        raise BadInput(f"unknown issue writer {issue_writer!r}; choose template or llm")
    if issue_writer == "llm":
        from cligym.issue.llm import write_llm_issues

        written, refused = write_llm_issues(run_dir, model_client(model, base_url, model_config, api_key_env),
                                            seed)
        out.print(f"issue texts: {written} written by the model, {refused} refused twice (template kept)")
    write_missing_issues(run_dir)
    style = style or ("seeded" if issue_writer == "llm" else "strong")
    runtime = Runtime() if exporter.builds_from_gold or registry else None
    report = run_export(run_dir, fmt, output, hint=hint, style=style, force=force, offline_only=offline_only,
                        min_difficulty=min_difficulty, runtime=runtime, registry=registry, task_images=task_images)
    if as_json:
        print_json(report)
        return
    out.print(f"exported {len(report.tasks)} tasks as {report.format} to {report.output}")
    if report.parquet:
        out.print(f"the same rows as Parquet, {report.parquet}, with the dataset card {report.card} "
                  "(datasets.load_dataset reads them)")
    if len(report.left_out) > report.below_min_difficulty:
        out.print(f"left out {len(report.left_out) - report.below_min_difficulty} task(s) that are not offline-fair "
                  "(--with-network exports them)")
    if report.min_difficulty is not None:
        out.print(f"--min-difficulty {report.min_difficulty} left out {report.below_min_difficulty} task(s)"
                  f", {report.unmeasured_left_out} of them unmeasured")
    bases = [report.gold_pinned.get(i, i) for i in report.gold_images]
    out.print(f"they build FROM {len(bases)} gold image(s): {', '.join(bases)}", highlight=False)
