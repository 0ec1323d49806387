"""``cligym dataset build|status``: many projects in, one verified dataset out."""

from __future__ import annotations

import re
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Annotated, Optional

import typer

from cligym.cli.app import Quiet, err, print_json, print_pairs, print_table, stage_reporter, writable_output
from cligym.errors import BadInput

dataset_app = typer.Typer(help="Build a dataset from many projects, and follow its progress.", no_args_is_help=True)

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)

#: how often --ray runs a unit again whose node died (with --registry: nothing ties it to that node)
RAY_RETRIES = 2


def parse_size(text: str) -> int:
    """'500M', '20G', '1.5T', '123' (bytes) → bytes."""
    match = _SIZE.match(text or "")
    if not match:
        raise BadInput(f"--max-disk {text!r} is no size (write e.g. 500M, 20G)")
    return int(float(match.group(1)) * 1024 ** " kmgt".index(match.group(2).lower() or " "))


def _slots(workers: int) -> int:
    """``workers``, capped by what the engine can run at once (its CPUs, its memory over the
    memory limit of one container)."""
    from cligym.config import DEFAULT_MEM_LIMIT
    from cligym.runtime import Runtime

    with closing(Runtime()) as runtime:
        cpus, memory = runtime.capacity()
    per = parse_size(DEFAULT_MEM_LIMIT)
    cap = max(1, min(cpus, memory // per if memory else cpus))
    if workers > cap:
        err.print(f"cligym: --workers {workers} capped to {cap} (the engine has {cpus} CPUs and "
                  f"{memory / 2**30:.1f} GiB for containers of {DEFAULT_MEM_LIMIT})", markup=False, highlight=False)
    return min(workers, cap)


@dataset_app.command("build")
def build(
    projects: Annotated[Path, typer.Argument(help="PROJECTS.toml: a 'project' array of tables, each with a source.")],
    output: Annotated[Path, typer.Option(
        "-o", "--output", help="The dataset directory (created; resumed if it exists).")],
    workers: Annotated[int, typer.Option(help="Units run at once (capped by the engine's CPUs and memory).")] = 1,
    ray: Annotated[Optional[str], typer.Option(
        "--ray", help="Run units on a Ray cluster: its address (host:port) or 'auto'.")] = None,
    seed: Annotated[int, typer.Option(help="Seed: the same seed and projects give the same tasks.")] = 0,
    max_hours: Annotated[Optional[float], typer.Option(help="Start no unit after this many hours.")] = None,
    max_disk: Annotated[Optional[str], typer.Option(
        help="Start no unit once the dataset takes this much (e.g. 20G).")] = None,
    bundle: Annotated[bool, typer.Option(help="Save the gold images into the dataset (one tar).")] = True,
    registry: Annotated[Optional[str], typer.Option(
        help="HOST:PORT of an OCI registry: each gold image is pushed when built, tasks build FROM it by digest, "
             "and with --ray any node pulls it where missing (no unit is tied to a node).")] = None,
    retry_failed: Annotated[bool, typer.Option(
        "--retry-failed", help="Run again the units that failed in an earlier build of OUTPUT.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the dataset summary as JSON.")] = False,
    quiet: Quiet = False,
) -> None:
    """Make one verified dataset from a list of projects: gold, invert, export and validate
    each, in parallel, into OUTPUT (Harbor tasks with dataset.toml, tasks.jsonl, the gold
    image bundle, ledger.sqlite, summary.json).

    Interrupted or killed, the same command goes on where it stopped; 'cligym dataset
    status OUTPUT' shows the progress from another terminal.
    """
    from cligym.dataset import Budgets, build as run_build, make_plan
    from cligym.dataset.pools import LocalPool, ray_pool
    from cligym.layout import DatasetDir
    from cligym.models.registry import registry_name

    if workers < 1:
        raise BadInput("--workers must be at least 1")
    if max_hours is not None and max_hours <= 0:
        raise BadInput("--max-hours must be positive")
    budgets = Budgets(deadline=time.time() + max_hours * 3600 if max_hours else None,
                      max_disk=parse_size(max_disk) if max_disk else None, retry_failed=retry_failed)
    plan = make_plan(projects, seed, bundle=bundle, registry=registry_name(registry) if registry else None)
    writable_output(output, what="dataset directory")
    dataset = DatasetDir(output)
    with stage_reporter(quiet or as_json) as progress:  # the display starts with the build
        if ray:
            pool = ray_pool(dataset, ray, workers if workers > 1 else None, retries=RAY_RETRIES if plan.registry else 0)
        else:
            pool = LocalPool(dataset, _slots(workers), [sys.executable, "-m", "cligym", "dataset", "unit"])
        summary = run_build(output, plan, pool, budgets=budgets, reporter=progress)
    if as_json:
        print_json(summary, by_alias=True)
    else:
        _print_summary(summary, output)
    if summary.validated == 0 and not summary.stopped:
        raise typer.Exit(1)


def _print_summary(summary, output: Path) -> None:
    print_table(f"dataset {output}", ["project", "state", "gold tests", "attempts", "verified", "exported",
                                      "validated", "yield", "cause"],
                [(p.key, p.state, p.gold_tests, p.attempts, p.verified, p.exported, p.validated,
                  f"{p.yield_:.0%}", p.cause) for p in summary.projects])
    rows = [("tasks (validated / exported)", f"{summary.validated} / {summary.tasks}"),
            ("yield", f"{summary.yield_:.0%} of {summary.attempts} attempts"),
            ("tasks per hour", f"{summary.tasks_per_hour} ({summary.hard} hard: {summary.hard_per_hour} per hour)"),
            ("unit seconds", ", ".join(f"{kind} {seconds:.0f}" for kind, seconds
                                       in summary.unit_seconds_by_kind.model_dump(by_alias=True).items() if seconds)),
            ("seconds per verified task", f"{summary.seconds_per_verified}: " + ", ".join(
                f"{phase} {seconds / max(summary.verified, 1):.1f}" for phase, seconds
                in summary.phase_seconds.spent().items())),
            ("bytes per task (beyond the gold images)",
             f"{summary.bytes_per_task:.0f} ({summary.bytes_per_task_beyond_gold:.0f})"
             if summary.bytes_per_task else "-"),
            ("gold image bundle", f"{summary.bundle_bytes / 1e6:.1f} MB")]
    if summary.left_out_for_mix:
        rows.append(("left out for the mix", f"{len(summary.left_out_for_mix)} validated tasks in left-out/ "
                                             "(no scenario family above a quarter of the dataset, no failing "
                                             "set above a quarter of a project's tasks where it has four sets)"))
    if summary.stopped:
        rows.append(("stopped early", f"{summary.stopped} (run the same command to go on)"))
    print_pairs("dataset summary", rows)


@dataset_app.command("status")
def status(
    output: Annotated[Path, typer.Argument(help="A dataset directory made by 'cligym dataset build'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the progress as JSON.")] = False,
) -> None:
    """Progress per project, read from the ledger (also while a build is running)."""
    from cligym.dataset import dataset_status

    figures, running = dataset_status(output)
    if as_json:
        print_json({"projects": [f.model_dump(by_alias=True) for f in figures], "running": running})
        return
    print_table(f"dataset {output}", ["project", "state", "attempts", "verified", "exported", "validated", "cause"],
                [(f.key, f.state, f.attempts, f.verified, f.exported, f.validated, f.cause) for f in figures])
    print_pairs("running now", [(key, "") for key in running] or [("nothing", "")])


@dataset_app.command("unit", hidden=True)
def unit(
    output: Annotated[Path, typer.Argument()],
    key: Annotated[str, typer.Argument()],
    deadline: Annotated[Optional[float], typer.Option()] = None,
) -> None:
    """(internal) Run one unit of a dataset build in this process; the build starts it."""
    from cligym.dataset.pools import write_outcome
    from cligym.dataset.units import run_unit
    from cligym.layout import DatasetDir

    outcome = run_unit(output, key, deadline)
    write_outcome(DatasetDir(output), key, outcome)
