"""Units as Ray tasks on a Ray cluster (the optional ``ray`` extra).

Every node needs a Docker engine with cligym's base image, and this package; the dataset
directory must be the same path on every node (shared storage, or one machine).

With a registry (``dataset build --registry``), every gold image is pushed when it is built
and a unit on any node pulls it, by digest, where that node's engine lacks it: no unit is
tied to a node, and a unit whose node leaves the cluster while it runs is run again
elsewhere (Ray retries it; units are idempotent). Without one, a project's units after its
gold run on the node that built the gold (``NodeAffinitySchedulingStrategy``), where its
image is; a unit whose node has left fails with the missing gold image as its cause (load
it with ``cligym images load`` there, then ``--retry-failed``). Outcomes come back to the
head, which alone writes the ledger.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from cligym.errors import BadInput
from cligym.layout import DatasetDir
from cligym.dataset.pools import Finished
from cligym.models.dataset import UnitOutcome


def _remote_unit(dataset_dir: str, key: str, deadline: float | None) -> tuple[str, float]:
    """What a Ray worker runs: the unit, with the node it ran on (JSON: no pickled models)."""
    from cligym.dataset.units import run_unit

    started = time.monotonic()
    outcome = run_unit(Path(dataset_dir), key, deadline)
    node = ray.get_runtime_context().get_node_id()
    return outcome.model_copy(update={"node": node}).model_dump_json(), time.monotonic() - started


class RayPool:
    """Units as Ray tasks, one CPU each; ``slots``: the cluster's CPUs unless told fewer."""

    def __init__(self, dataset: DatasetDir, address: str, workers: int | None, retries: int = 0) -> None:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        try:
            ray.init(address=address, log_to_driver=False, include_dashboard=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise BadInput(f"cannot join the Ray cluster at {address}: {str(exc).splitlines()[0]}") from exc
        self.dataset = dataset
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.slots = min(workers, cpus) if workers else cpus
        # retries: runs again of a unit whose worker or node died (a unit's own failure is an outcome)
        self._task = ray.remote(num_cpus=1, max_retries=retries)(_remote_unit)
        self._refs: dict[ray.ObjectRef, str] = {}
        self._alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}

    def submit(self, key: str, deadline: float | None, node: str | None) -> None:
        options = {}
        if node and node in self._alive:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
        ref = self._task.options(**options).remote(str(self.dataset.path), key, deadline)
        self._refs[ref] = key

    def running(self) -> set[str]:
        return set(self._refs.values())

    def wait(self, timeout: float) -> list[Finished]:
        if not self._refs:
            return []
        refs = list(self._refs)
        ready, rest = ray.wait(refs, num_returns=1, timeout=timeout)
        if ready and rest:
            ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        finished = []
        for ref in ready:
            key = self._refs.pop(ref)
            try:
                text, seconds = ray.get(ref)
                outcome = UnitOutcome.model_validate_json(text)
            except ray.exceptions.RayError as exc:
                outcome, seconds = UnitOutcome(ok=False, detail=f"the Ray task failed: {str(exc).splitlines()[0]}"), 0.0
            finished.append((key, outcome, seconds))
        return finished

    def stop(self) -> None:
        for ref in self._refs:
            ray.cancel(ref, force=False)
        self._refs.clear()
        ray.shutdown()
