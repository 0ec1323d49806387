"""``cligym curate``: successful, honest, long-enough trajectories become SFT data, from a
``cligym rollout`` directory or a Harbor job directory (``harbor run``'s JOBS/<job>)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cligym.cli.app import JsonSummary, print_json, print_pairs, writable_output


def curate(
    input_dir: Annotated[Path, typer.Argument(
        help="A directory made by 'cligym rollout', or a Harbor job directory (JOBS/<job> of 'harbor run -o JOBS').")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where sft.jsonl and summary.json go.")],
    min_steps: Annotated[int, typer.Option(help="Drop successful trajectories shorter than this.")] = 20,
    loop_repeat: Annotated[int, typer.Option(help="Same action this many times without news = a loop.")] = 3,
    as_json: JsonSummary = False,
) -> None:
    """Keep successful, honest, long-enough trajectories as SFT data; flag loops. Reads a rollout
    dir or a Harbor job dir (the summary's source says which)."""
    from cligym.curate import curate as run_curate

    writable_output(output, what="curation directory")
    summary = run_curate(input_dir, output, min_steps=min_steps, loop_repeat=loop_repeat)
    if as_json:
        print_json(summary)
    else:
        print_pairs("curation", ((key, str(value)) for key, value in summary.model_dump().items()))
