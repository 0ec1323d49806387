"""``cligym dataset build`` on two real PyPI projects, on a real engine. The default run
builds once, on a two-node Ray cluster on this machine: both nodes work, every task is
validated (oracle 1, nop 0), and ``dataset status`` reads its ledger. The slow cases
compare other builds of the same seed with that one, task for task: one local worker, and
a build killed with SIGKILL in the middle and run again (the same task set, no finished
unit repeated, no container left), and Ray nodes with a registry, one of which leaves."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cligym.layout import DatasetDir
from cligym.models.dataset import DatasetSummary
from cligym.models.io import load
from cligym.models.registry import RegistryIndex

from .servers import empty_engine, registry_server

PROJECTS = ("markupsafe==3.0.2", "python-dotenv==1.2.1")


def projects_file(folder: Path) -> Path:
    path = folder / "projects.toml"
    body = "attempts = 2\ntasks = 1\n" + "".join(f'\n[[project]]\nsource = "{spec}"\n' for spec in PROJECTS)
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def build_cmd(projects: Path, out: Path, *extra: str, workers: int = 2) -> list[str]:
    return [sys.executable, "-m", "cligym", "dataset", "build", str(projects), "-o", str(out), "--workers",
            str(workers), "--seed", "3", "--no-bundle", "-q", *extra]


def ledger_rows(out: Path) -> dict[str, sqlite3.Row]:
    db = sqlite3.connect(f"file:{DatasetDir(out).ledger}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        return {row["key"]: row for row in db.execute("SELECT * FROM units")}
    finally:
        db.close()


def task_set(out: Path) -> list[str]:
    return [r["instance_id"] for r in rows_of(out)]


def rows_of(out: Path) -> list[dict]:
    return [json.loads(line) for line in DatasetDir(out).jsonl.read_text().splitlines() if line.strip()]


def same_task(row: dict) -> tuple:
    """What makes two builds' rows the same task, whatever gold build they came from."""
    return row["dockerfile"], row["FAIL_TO_PASS"], row["PASS_TO_PASS"]


def _wait_for(proc: subprocess.Popen, out: Path, ready, what: str) -> dict[str, sqlite3.Row]:
    deadline = time.monotonic() + 1200
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the build ended before {what}: {proc.communicate()}"
        if DatasetDir(out).ledger.is_file():
            try:
                rows = ledger_rows(out)
            except sqlite3.Error:
                rows = {}
            if ready(rows):
                return rows
        time.sleep(0.5)
    raise AssertionError(f"no {what} within 20 minutes")


def _mid_run(rows: dict[str, sqlite3.Row]) -> bool:
    """Some attempt done and some unit running: the kill lands in the middle."""
    states = [r["state"] for r in rows.values()]
    return any(k.startswith("attempt/") for k in rows) and "running" in states and \
        any(r["state"] == "done" for k, r in rows.items() if k.startswith("gold/"))


@pytest.fixture(scope="module")
def ray_built(tmp_path_factory, base_image) -> Path:
    """One build on a Ray cluster of two nodes of one CPU each on this machine (the cluster
    is removed afterwards), shared by the checks below and the slow comparisons."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    from ray.cluster_utils import Cluster

    folder = tmp_path_factory.mktemp("dataset-ray")
    out = folder / "out"
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        done = subprocess.run([*build_cmd(projects_file(folder), out, "--json"), "--ray", cluster.address],
                              capture_output=True, text=True, timeout=1800,
                              env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    finally:
        cluster.shutdown()
    assert done.returncode == 0, done.stderr[-2000:]
    return out


# slow (~3.5 min): kill -9 and resume stay in the default run with invert's case
# (tests/engine/test_signals.py), Ray's cluster with the build's determinism below
@pytest.mark.slow
def test_a_build_killed_with_sigkill_goes_on_to_the_same_dataset(ray_built, runtime, tmp_path):
    projects = projects_file(tmp_path)
    out = tmp_path / "out"
    proc = subprocess.Popen(build_cmd(projects, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    before = _wait_for(proc, out, _mid_run, "attempt while units run")
    proc.send_signal(signal.SIGKILL)
    proc.wait(60)
    finished_before = {k for k, r in before.items() if r["state"] == "done" and not k.startswith("attempt/")}
    assert finished_before, "nothing had finished when the head was killed"

    done = subprocess.run(build_cmd(projects, out, "--json"), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = DatasetSummary.model_validate_json(done.stdout)

    assert task_set(out) == task_set(ray_built)  # same tasks, same order (sorted ids)
    assert len(set(task_set(out))) == len(task_set(out)) > 0  # no duplicates
    after = ledger_rows(out)
    assert all(after[k]["runs"] == 1 for k in finished_before), "a unit finished before the kill ran again"
    validations = [r for k, r in after.items() if k.startswith("validate/")]
    assert len(validations) == summary.tasks == summary.validated
    assert all(r["state"] == "done" and r["oracle"] == 1 and r["nop"] == 0 for r in validations)
    assert sorted(p.name for p in DatasetDir(out).harbor.path.iterdir() if p.is_dir()) == task_set(out)
    # what the killed workers ran was reaped, and the builds left nothing (other runs may share the engine)
    assert runtime.dead_containers() == []
    for project in load(DatasetSummary, DatasetDir(out).summary).projects:
        assert project.state == "done" and project.attempts <= 2


# slow (~2 min): the default run keeps the attempts' determinism at any concurrency
# (tests/engine/test_invert_parallel.py); this compares whole builds, local and on Ray
@pytest.mark.slow
def test_one_worker_makes_the_same_tasks_as_two(ray_built, tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(build_cmd(projects_file(tmp_path), out, workers=1), capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    assert task_set(out) == task_set(ray_built)
    # the same task files too: Harbor's manifest (both directories are named "out") lists the same digests
    assert DatasetDir(out).manifest.read_text() == DatasetDir(ray_built).manifest.read_text()


def test_status_reads_the_ledger_as_json(ray_built):
    done = subprocess.run([sys.executable, "-m", "cligym", "dataset", "status", str(ray_built), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert [p["key"] for p in status["projects"]] == ["markupsafe-3.0.2", "python-dotenv-1.2.1"]
    assert status["running"] == []
    summary = load(DatasetSummary, DatasetDir(ray_built).summary)
    assert sum(p["validated"] for p in status["projects"]) == summary.validated == len(task_set(ray_built))
    assert 0 < summary.bytes_per_task_beyond_gold <= summary.bytes_per_task  # no bundle here


def test_a_build_on_a_two_node_ray_cluster_validates_every_task(ray_built, runtime):
    rows = ledger_rows(ray_built)
    nodes = {r["node"] for k, r in rows.items() if not k.startswith("attempt/")}
    assert len(nodes) == 2, nodes  # both nodes worked
    for project in ("markupsafe-3.0.2", "python-dotenv-1.2.1"):
        ran_on = {r["node"] for r in rows.values() if r["project"] == project and r["kind"] != "attempt"}
        assert ran_on == {rows[f"gold/{project}"]["node"]}  # a project's units stay with its gold image
    validations = [r for k, r in rows.items() if k.startswith("validate/")]
    assert len(validations) == len(task_set(ray_built)) > 0
    assert all(r["state"] == "done" and r["oracle"] == 1 and r["nop"] == 0 for r in validations)
    assert len(set(task_set(ray_built))) == len(task_set(ray_built))  # no duplicates
    assert runtime.dead_containers() == []


@pytest.fixture
def ray_cluster_with_registry(tmp_path_factory, base_image):
    """A registry on 127.0.0.1 and a Ray cluster of two one-CPU nodes on this machine, each
    node's units on a Docker engine of its own that holds only cligym's base images (nodes
    that never saw a gold image). All removed afterwards."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    from ray.cluster_utils import Cluster

    from cligym.gold.wheel_build import BUILD_IMAGE

    bases = tmp_path_factory.mktemp("bases") / "bases.tar"
    assert subprocess.run(["docker", "save", "-o", str(bases), base_image, BUILD_IMAGE]).returncode == 0
    with registry_server(tmp_path_factory.mktemp("registry")) as registry, \
            empty_engine(tmp_path_factory.mktemp("engine")) as first, \
            empty_engine(tmp_path_factory.mktemp("engine")) as other:
        for engine in (first, other):
            loaded = subprocess.run(["docker", "-H", engine, "load", "-q", "-i", str(bases)], capture_output=True)
            assert loaded.returncode == 0, loaded.stderr
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                                "env_vars": {"DOCKER_HOST": first}})
        try:
            second = cluster.add_node(num_cpus=1, env_vars={"DOCKER_HOST": other})
            cluster.wait_for_nodes()
            yield cluster, second, registry, (first, other)
        finally:
            cluster.shutdown()


# slow (~6 min): both nodes build and pull gold images from nothing; the pinned Ray case
# above keeps Ray in the default run, tests/engine/test_registry.py the registry
@pytest.mark.slow
def test_a_build_on_two_ray_nodes_with_a_registry_goes_on_when_a_node_leaves(
        ray_built, ray_cluster_with_registry, runtime, tmp_path):
    """With --registry no unit is tied to the node that built its gold: the second node is
    stopped once it has finished a unit, the build goes on on the head (which pulls what it
    lacks), and ends with the tasks of a one-machine build of the same seed, every one
    built FROM its gold image pinned by digest in the registry; each engine ends up holding
    every gold image it needed, by the registry's digest."""
    cluster, second, registry, engines = ray_cluster_with_registry
    out = tmp_path / "out"
    proc = subprocess.Popen([*build_cmd(projects_file(tmp_path), out, "--json"), "--ray", cluster.address,
                             "--registry", registry], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})

    def one_done_there(rows) -> bool:  # a unit done on the second node, and the build not over
        there = [k for k, r in rows.items() if r["state"] == "done" and r["node"] == second.node_id]
        return bool(there) and any(r["state"] != "done" for k, r in rows.items() if k.startswith(("invert", "export")))

    before = _wait_for(proc, out, one_done_there, "a unit done on the second node")
    cluster.remove_node(second)
    stdout, stderr = proc.communicate(timeout=1800)
    assert proc.returncode == 0, stderr[-2000:]
    rows = ledger_rows(out)
    assert all(r["state"] == "done" for k, r in rows.items() if not k.startswith("attempt/")), [
        (k, r["state"], r["node"][:8], r["detail"]) for k, r in rows.items() if not k.startswith("attempt/")]
    # the same tasks: the same ΔD, failing and passing tests (a task's id ends with a digest
    # of its gold image, which the fresh engines built again)
    assert [t.rsplit(".", 1)[0] for t in task_set(out)] == [t.rsplit(".", 1)[0] for t in task_set(ray_built)]
    assert [same_task(r) for r in rows_of(out)] == [same_task(r) for r in rows_of(ray_built)]
    left = [k for k, r in before.items() if r["state"] != "done" and not k.startswith("attempt/")]
    assert left and all(rows[k]["node"] != second.node_id for k in left)  # finished elsewhere
    # every gold image was pushed, and every task builds FROM it by digest
    index = load(RegistryIndex, DatasetDir(out).registry)
    assert len(index.images) == len(PROJECTS) and all(r.registry == registry for r in index.images)
    pinned = {r.pinned for r in index.images}
    for task in DatasetDir(out).harbor.task_dirs():
        assert task.dockerfile.read_text().split("\nFROM ", 1)[1].split("\n", 1)[0] in pinned
    assert runtime.dead_containers() == []


def test_sigterm_stops_the_workers_which_remove_their_containers(runtime, base_image, tmp_path):
    """SIGTERM (what timeout and CI send) ends the build like Ctrl-C: each worker stops and
    removes its containers, the head prints the resume line and exits 143."""
    from cligym.cli.signals import INTERRUPTED

    projects = tmp_path / "projects.toml"
    projects.write_text('attempts = 2\ntasks = 1\n[[project]]\nsource = "markupsafe==3.0.2"\n', encoding="utf-8")
    out = tmp_path / "out"
    proc = subprocess.Popen(build_cmd(projects, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    workers: set[int] = set()

    def busy(rows):  # a worker holds a container
        kids = _children(proc.pid)
        workers.update(kids)
        return any(runtime.labelled_containers(pid=pid) for pid in kids)

    _wait_for(proc, out, busy, "a worker's container")
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 143, stderr
    assert stderr.strip().splitlines()[-1] == INTERRUPTED
    assert all(runtime.labelled_containers(pid=pid) == [] for pid in workers)
    assert "running" in {r["state"] for r in ledger_rows(out).values()}  # the next build runs it again


def _children(parent: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                found.add(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found
