"""Gold images through a real registry (Debian's docker-registry on 127.0.0.1): an export
pinned by digest runs on a second, empty engine that has only the registry to pull from
(oracle 1, nop 0 in cligym's own runner), and every registry failure is one clear line
with a non-zero exit and nothing recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import docker
import pytest

from cligym.layout import ExportDir, GoldDir, RunDir
from cligym.models.export import ExportReport
from cligym.models.io import load
from cligym.models.registry import RegistryIndex
from cligym.models.task import Task

from .servers import empty_engine, free_port, registry_server

HARBOR_PY = Path(__file__).resolve().parents[2] / ".venv-harbor" / "bin" / "python"
#: tasks of the shared markupsafe run validated on the empty engine (each is a build, an
#: oracle run and a nop run there; the slow Harbor CLI case runs them all)
VALIDATED = 2


def cligym(*args: str, engine: str | None = None, timeout: float = 1800) -> subprocess.CompletedProcess:
    env = {**os.environ, **({"DOCKER_HOST": engine} if engine else {})}
    return subprocess.run([sys.executable, "-m", "cligym", *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> str:
    with registry_server(tmp_path_factory.mktemp("registry")) as address:
        yield address


@pytest.fixture(scope="module")
def engine(tmp_path_factory) -> str:
    with empty_engine(tmp_path_factory.mktemp("engine")) as address:
        yield address


@pytest.fixture(scope="module")
def pinned_export(markupsafe_run, registry, tmp_path_factory) -> tuple[Path, Path]:
    """(a copy of the shared markupsafe run, its Harbor export with --registry --task-images)."""
    folder = tmp_path_factory.mktemp("pinned")
    run = folder / "run"
    shutil.copytree(markupsafe_run / "run", run)  # the shared run stays as it was
    done = cligym("export", str(run), "-o", str(folder / "tasks"), "--registry", registry, "--task-images", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    return run, folder / "tasks"


def test_an_export_pinned_by_digest_runs_on_an_empty_engine_from_the_registry(
        pinned_export, registry, engine, runtime, tmp_path):
    run, tasks = pinned_export
    report = load(ExportReport, ExportDir(tasks).report)
    gold = load(Task, RunDir(run).task_records()[0]).image_name
    pinned = report.gold_pinned[gold]
    assert report.registry == registry and pinned.startswith(f"{registry}/cligym/gold-") and "@sha256:" in pinned
    for task in ExportDir(tasks).task_dirs():
        assert f"\nFROM {pinned}\n" in task.dockerfile.read_text()
    # recorded where the run is and beside the export, with what the registry serves now
    (record,) = load(RegistryIndex, RunDir(run).registry).images
    assert record.pinned == pinned and record.image_id == runtime.image_id(gold) and record.bytes > 0
    beside = load(RegistryIndex, ExportDir(tasks).registry).images
    assert beside[0] == record and len(beside) == 1 + len(ExportDir(tasks).task_dirs())
    assert runtime.served_digest(record.reference) == record.digest
    # each task's own image, named by digest where Harbor looks for a prebuilt one
    for task in ExportDir(tasks).task_dirs():
        named = tomllib.loads(task.task_toml.read_text())["environment"]["docker_image"]
        assert named == report.task_images[task.name] and named.startswith(f"{registry}/cligym/task-")
    if HARBOR_PY.exists():
        check = ("import sys, tomllib; from harbor.models.task.config import TaskConfig; "
                 "print(TaskConfig.model_validate(tomllib.load(open(sys.argv[1], 'rb'))).environment.docker_image)")
        task = ExportDir(tasks).task_dirs()[0]
        read = subprocess.run([str(HARBOR_PY), "-c", check, str(task.task_toml)], capture_output=True, text=True)
        assert read.stdout.strip() == report.task_images[task.name], read.stderr

    # an engine with nothing in it: validate builds every task FROM the registry's image
    assert docker.DockerClient(base_url=engine).images.list() == []
    some = tmp_path / "some"
    for task in ExportDir(tasks).task_dirs()[:VALIDATED]:
        shutil.copytree(task.path, some / task.name)
    done = cligym("validate", str(some), "--json", "-q", engine=engine)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    results = json.loads(done.stdout)
    assert [(r["oracle"]["reward"], r["nop"]["reward"]) for r in results] == [(1, 0)] * VALIDATED
    # the gold image came by digest, as pushed; a task's prebuilt image pulls as named
    other = docker.APIClient(base_url=engine)
    assert other.inspect_image(pinned)["Id"] == record.image_id
    prebuilt = report.task_images[ExportDir(tasks).task_dirs()[0].name]
    for _ in other.pull(prebuilt, stream=True, decode=True):
        pass
    assert (other.inspect_image(prebuilt)["Config"]["WorkingDir"]
            == load(Task, RunDir(run).task_records()[0]).workdir)

    # images pull names it as the tasks' local runs and the main engine do
    done = cligym("images", "pull", str(tasks), "--json", engine=engine)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["images"][0]["image"] == gold
    assert docker.APIClient(base_url=engine).inspect_image(gold)["Id"] == record.image_id


def test_a_push_to_a_registry_that_is_down_or_refuses_records_nothing(markupsafe_run, tmp_path):
    gold_dir = tmp_path / "gold"
    shutil.copytree(markupsafe_run / "gold", gold_dir)
    before = GoldDir(gold_dir).gold.read_bytes()

    down = cligym("images", "push", f"127.0.0.1:{free_port()}", str(gold_dir), timeout=300)
    assert down.returncode != 0 and "Traceback" not in down.stderr
    (line,) = down.stderr.strip().splitlines()
    assert "cannot push" in line and "connection refused" in line, line

    with registry_server(tmp_path / "readonly", readonly=True) as readonly:
        refused = cligym("images", "push", readonly, str(gold_dir), timeout=300)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert "cannot push " in line and readonly in line and "the registry refused it (HTTP 405)" in line, line

    bad = cligym("images", "push", "http://127.0.0.1:5000", str(gold_dir))
    assert bad.returncode == 2 and "without http://" in bad.stderr
    assert GoldDir(gold_dir).gold.read_bytes() == before  # nothing half-recorded


def test_a_registry_serving_another_digest_is_refused(markupsafe_run, registry, engine, runtime, base_image,
                                                      tmp_path):
    gold_dir = tmp_path / "gold"
    shutil.copytree(markupsafe_run / "gold", gold_dir)
    pushed = cligym("images", "push", registry, str(gold_dir), "--json", "-q")
    assert pushed.returncode == 0, pushed.stderr[-2000:]
    (record,) = GoldDir(gold_dir).load().registry_images
    assert json.loads(pushed.stdout)["images"][0]["digest"] == record.digest

    # the registry's tag now names other bytes (someone pushed another image over it)
    api = docker.APIClient()
    api.tag(base_image, record.repository, record.tag)
    try:
        for _ in api.push(record.repository, record.tag, stream=True, decode=True):
            pass
    finally:
        api.remove_image(record.reference, noprune=True)
    assert runtime.served_digest(record.reference) != record.digest

    other = docker.APIClient(base_url=engine)  # the test's own engine: it may lose the name
    if other.images(name=record.image):
        other.remove_image(record.image, noprune=True)
    pulled = cligym("images", "pull", str(gold_dir), engine=engine)
    assert pulled.returncode != 0 and "Traceback" not in pulled.stderr
    (line,) = pulled.stderr.strip().splitlines()
    assert f"the record says {record.digest}" in line and "refusing" in line, line
    with pytest.raises(docker.errors.ImageNotFound):  # nothing of what it serves now was fetched
        other.inspect_image(f"{record.repository}@{runtime.served_digest(record.reference)}")
