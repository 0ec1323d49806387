"""``cligym images save|load|push|pull``: move the gold images exported tasks build FROM, as
one tar or through an OCI registry (pinned by digest)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from cligym.cli.app import JsonReport, Quiet, err, out, print_json
from cligym.errors import BadInput

images_app = typer.Typer(help="Move the gold images that exported tasks build FROM: a tar (save, load) or a "
                          "registry (push, pull).", no_args_is_help=True)


@images_app.command("save")
def images_save(
    source: Annotated[Path, typer.Argument(help="A run directory or an export directory.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The tar file to write.")],
    as_json: JsonReport = False,
) -> None:
    """docker save the gold images of a run or export into one tar (shared layers once)."""
    from cligym.export.publish import gold_images_of
    from cligym.runtime import Runtime

    images, count = gold_images_of(source)
    if not count:
        raise BadInput(f"{source} holds no task, so no gold image to save")
    runtime = Runtime()
    missing = [i for i in images if not runtime.image_exists(i)]
    if missing:
        raise BadInput(f"gold image {missing[0]} is not in the Docker engine")
    size = runtime.save_images(images, output)
    result = dict(file=str(output), images=images, tasks=count, bytes=size,
                  bytes_per_task=round(size / count))
    if as_json:
        print_json(result)
    else:
        out.print(f"saved {len(images)} image(s), {size / 1e6:.1f} MB "
                  f"({result['bytes_per_task'] / 1e6:.1f} MB per task) to {output}")


@images_app.command("load")
def images_load(
    file: Annotated[Path, typer.Argument(help="A tar written by 'cligym images save'.")],
    as_json: JsonReport = False,
) -> None:
    """docker load gold images saved on another machine."""
    from cligym.runtime import Runtime

    if not file.is_file():
        raise BadInput(f"{file} does not exist")
    loaded = Runtime().load_images(file)
    if as_json:
        print_json({"loaded": loaded})
    else:
        out.print(f"loaded {', '.join(loaded) or 'nothing'}")


Sources = Annotated[list[Path], typer.Argument(help="Gold, run, export or dataset directories.")]


def _show_layer(layer: str, status: str) -> None:
    """Each layer as the engine finishes it (stderr)."""
    if status in ("Pushed", "Layer already exists", "Pull complete", "Already exists"):
        err.print(f"  {layer}: {status.lower()}", highlight=False)


@images_app.command("push")
def images_push(
    registry: Annotated[str, typer.Argument(help="HOST:PORT or HOST:PORT/NAMESPACE, e.g. 127.0.0.1:5000.")],
    sources: Sources,
    quiet: Quiet = False,
    as_json: JsonReport = False,
) -> None:
    """Push the gold images of SOURCES to REGISTRY and record each one's digest.

    Records land in gold.json (gold and dataset directories), the dataset's or run's
    registry.json, or beside an export; only once the registry confirms the digest.
    Layers the registry has are skipped, so a push that failed goes on where it stopped.
    """
    from cligym.export.publish import push
    from cligym.models.registry import registry_name
    from cligym.runtime import Runtime

    name, quiet = registry_name(registry), quiet or as_json
    started = time.monotonic()

    def pushed(record) -> None:
        if not quiet:
            out.print(f"pushed {record.image} → {record.pinned} ({record.bytes / 1e6:.1f} MB)", highlight=False)

    records = push(Runtime(), name, sources, on_progress=None if quiet else _show_layer, on_image=pushed)
    seconds = round(time.monotonic() - started, 1)
    if as_json:
        print_json({"registry": name, "seconds": seconds,
                    "images": [r.model_dump(mode="json") | {"pinned": r.pinned} for r in records]})
    else:
        out.print(f"{len(records)} image(s) in {name} in {seconds} s")


@images_app.command("pull")
def images_pull(
    sources: Sources,
    registry: Annotated[Optional[str], typer.Option(help="Pull from this registry (default: where each "
                                                         "image was pushed last).")] = None,
    quiet: Quiet = False,
    as_json: JsonReport = False,
) -> None:
    """Pull the gold images of SOURCES from the registry they were pushed to, by digest.

    A registry that now serves another digest for an image's tag is refused, and an image
    whose id differs from the record is not kept."""
    from cligym.export.publish import pull
    from cligym.models.registry import registry_name
    from cligym.runtime import Runtime

    name, quiet = registry_name(registry) if registry else None, quiet or as_json
    started = time.monotonic()

    def pulled(record, fresh: bool) -> None:
        if not quiet:
            out.print(f"{'pulled' if fresh else 'present'} {record.image} ({record.pinned})", highlight=False)

    results = pull(Runtime(), sources, name, on_progress=None if quiet else _show_layer, on_image=pulled)
    seconds = round(time.monotonic() - started, 1)
    if as_json:
        print_json({"seconds": seconds, "images": [r.model_dump(mode="json") | {"pinned": r.pinned, "pulled": fresh}
                                                   for r, fresh in results]})
    else:
        out.print(f"{sum(f for _, f in results)} pulled, {sum(not f for _, f in results)} already present, "
                  f"in {seconds} s")
