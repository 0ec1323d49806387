"""How a gold suite's test files are ordered and divided: the seeded order in which every
prefix spreads over the project's packages (``stratified``), and the splits of a run's files
between containers of about equal weight (``split``, ``split_led``, ``chunks_of``). The
first pass (``cligym.gold.shards``) and the repeats (``cligym.gold.suite``) run them."""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence

from cligym.models.gold import SuiteSample


def package_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def stratified(files: Sequence[str], seed: int, weights: dict[str, float] | None = None) -> list[str]:
    """``files`` in a seeded order in which every prefix spreads over the packages (their
    folders): one file of each package in turn, packages and files within each shuffled;
    with ``weights``, each package's lightest file first (every package costs least to
    represent), the others shuffled."""
    rng = random.Random(f"suite:{seed}")
    packages: dict[str, list[str]] = {}
    for path in files:
        packages.setdefault(package_of(path), []).append(path)
    queues = list(packages.values())
    rng.shuffle(queues)
    for members in queues:
        rng.shuffle(members)
        if weights:
            lightest = min(members, key=lambda f: weight_of(weights, f))
            members.remove(lightest)
            members.insert(0, lightest)
    order = []
    while any(queues):
        for members in queues:
            if members:
                order.append(members.pop(0))
    return order


def chunks_of(files: Sequence[str], weights: dict[str, float], sample: SuiteSample) -> list[list[str]]:
    """``files`` split between the sample's shards, in more chunks (run ``sample.shards`` at a
    time) where one would hold more files than a container of the first pass ran."""
    cap = sample.shard_files or len(files)
    return split(files, weights, max(sample.shards, -(-len(files) // max(1, cap))))


def split(files: Sequence[str], weights: dict[str, float], shards: int) -> list[list[str]]:
    """``files`` cut into at most ``shards`` runs of about equal weight, keeping their order."""
    shards = max(1, min(shards, len(files)))
    total = sum(weight_of(weights, f) for f in files)
    out: list[list[str]] = [[] for _ in range(shards)]
    done = 0.0
    for path in files:
        weight = weight_of(weights, path)
        index = min(shards - 1, int((done + weight / 2) / total * shards))  # where the file's middle falls
        out[index].append(path)
        done += weight
    return [chunk for chunk in out if chunk]


def split_led(files: Sequence[str], leading: Collection[str], weights: dict[str, float],
              shards: int) -> list[list[str]]:
    """``files`` cut into at most ``shards`` runs of about equal weight, each beginning with
    its share of those in ``leading`` (a deadline cuts a run's last files: of a round of the
    first pass, the files of packages none of which has run yet lead); the others, in
    order, fill each run up to an equal share of the whole weight."""
    heads = split([f for f in files if f in leading], weights, shards) if leading else []
    runs = heads + [[] for _ in range(max(1, min(shards, len(files))) - len(heads))]
    share = sum(weight_of(weights, f) for f in files) / len(runs)
    load = [sum(weight_of(weights, f) for f in run) for run in runs]
    at = 0
    for path in (f for f in files if f not in leading):
        weight = weight_of(weights, path)
        while at < len(runs) - 1 and load[at] + weight / 2 >= share:  # where the file's middle falls
            at += 1
        runs[at].append(path)
        load[at] += weight
    return [run for run in runs if run]


def weight_of(weights: dict[str, float], path: str) -> float:
    return max(weights.get(path, 1.0), 1.0)  # a file of no test (a module that fails to import) still costs
