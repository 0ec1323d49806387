"""``cligym clean``: remove what cligym runs that ended left in the engine (which runs are
alive, their owner labels say: ``cligym.runtime.owner``)."""

from __future__ import annotations

from typing import Annotated

import typer

from cligym.cli.app import JsonReport, err, out, print_json

DAY = 86400.0


def clean(
    images: Annotated[bool, typer.Option(
        "--images",
        help="Also remove images: the scratch images (broken states, task images, successors, "
             "re-checks) of runs that ended, and untagged leftovers older than any build; with "
             "--all every image with the cligym label, gold and base images included.",
    )] = False,
    cache: Annotated[float | None, typer.Option(
        "--cache", metavar="DAYS", min=0,
        help="With --images, also prune the cache: gold and base images built more than DAYS days "
             "ago that no container or image uses now (the next run that needs one builds it again).",
    )] = None,
    everything: Annotated[bool, typer.Option(
        "--all",
        help="Remove every container with the cligym label, those of runs still in progress too.",
    )] = False,
    as_json: JsonReport = False,
) -> None:
    """Remove what cligym runs that are no longer alive left in the engine.

    By default only containers whose run has ended are removed (with --images
    also that run's scratch images). A run is alive while the process that
    made a container or image is running: its labels name the process, its
    start time, the boot, the host and the pid namespace, so a reused pid or a
    reboot is not mistaken for it. Runs still in progress, and runs of other
    hosts or pid namespaces sharing the engine, keep everything. Gold and base
    images are a cache no run removes: --images --cache DAYS prunes the old
    ones, --all --images removes them all. --json reports the counts.
    """
    from cligym.runtime import Runtime
    from cligym.runtime.engine import CALL_TIMEOUT

    if cache is not None and not images:
        err.print("cligym: --cache prunes images: give --images too", markup=False, highlight=False)
        raise typer.Exit(2)
    runtime = Runtime()
    if everything:
        removed = runtime.remove_labelled_containers()
        removed_images = runtime.remove_labelled_images() if images else 0
    elif images:
        removed, removed_images = runtime.reap_dead_runs()
        removed_images += runtime.remove_unused(runtime.stale_images(CALL_TIMEOUT))
        if cache is not None:
            removed_images += runtime.remove_unused(runtime.stale_images(max(cache * DAY, CALL_TIMEOUT), cache=True))
    else:
        removed, removed_images = runtime.remove_containers(runtime.dead_containers()), 0
    scope = "every cligym run" if everything else "runs that ended"
    if as_json:
        print_json({"containers": removed, "images": removed_images, "all": everything})
    else:
        out.print(f"removed {removed} containers and {removed_images} images of {scope}")
