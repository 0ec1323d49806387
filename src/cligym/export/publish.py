"""Gold images to and from a registry, recorded where the user's records are.

A source is a gold directory, a run directory, an export (any format) or a dataset. What
was pushed is recorded only once the registry has confirmed the digest, each record
written whole (``save`` replaces the file): in a gold directory in ``gold.json``
(``GoldEnv.registry_images``), in a dataset in every project's ``gold.json`` and the
dataset's ``registry.json``, in a run directory in its ``registry.json``, and for an
export beside it (``ExportDir.registry``). A pull reads the same records.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import tomli_w

from cligym.config import exclusive
from cligym.errors import BadInput
from cligym.export.jsonl import read_rows
from cligym.layout import DatasetDir, ExportDir, GoldDir, RunDir
from cligym.models.io import load, save, write_atomic
from cligym.models.registry import RegistryImage, RegistryIndex
from cligym.models.task import Task
from cligym.runtime import ImageKind, Runtime
from cligym.runtime.registry import Progress


def gold_images_of(source: Path) -> tuple[list[str], int]:
    """The gold images (and task count) of a run dir or of an export in any format."""
    tasks = RunDir(source).task_records()
    if tasks:
        records = [load(Task, p, "task instance") for p in tasks]
        return sorted({t.image_name for t in records}), len(records)
    export = ExportDir(source)
    if export.jsonl.is_file():
        rows = read_rows(export)
        return sorted({r.image_name for r in rows}), len(rows)
    try:
        dirs = export.task_dirs()
    except BadInput:
        raise BadInput(f"{source} is neither a run directory nor an export (no tasks found)") from None
    images = set()
    for task in dirs:
        match = re.search(r"^FROM\s+(\S+)", task.dockerfile.read_text(), re.M)
        if match:
            images.add(match.group(1))
    return sorted(images), len(dirs)


@dataclass
class Source:
    """What one source asks for: its gold images, the gold records to note pushes in, and
    the index file it keeps (None for a lone gold directory)."""

    path: Path
    images: list[str]
    golds: list[GoldDir] = field(default_factory=list)
    index: Path | None = None


def source_of(path: Path) -> Source:
    """The images and records of ``path``, or BadInput saying what it is not."""
    if GoldDir(path).gold.is_file():
        return Source(path, [GoldDir(path).load().image], [GoldDir(path)])
    dataset = DatasetDir(path)
    if dataset.plan.is_file():
        golds = [GoldDir(dataset.gold(k)) for k in dataset.project_keys() if GoldDir(dataset.gold(k)).gold.is_file()]
        if not golds:
            raise BadInput(f"{path} is a dataset with no gold environment yet")
        return Source(path, sorted({g.load().image for g in golds}), golds, dataset.registry)
    if not path.is_dir():
        raise BadInput(f"{path} is not a directory (expected a gold, run, export or dataset directory)")
    images, _ = gold_images_of(path)
    index = RunDir(path).registry if RunDir(path).task_records() else ExportDir(path).registry
    return Source(path, images, [], index)


def _index(path: Path | None) -> RegistryIndex:
    return load(RegistryIndex, path, "registry index") if path is not None and path.is_file() else RegistryIndex()


def note(source: Source, record: RegistryImage) -> None:
    """Record a confirmed push in the source's gold records and index."""
    for gold_dir in source.golds:
        with exclusive(gold_dir.path):
            gold = gold_dir.load()
            if gold.image == record.image:
                kept = [r for r in gold.registry_images if r.registry != record.registry]
                save(gold.model_copy(update={"registry_images": [*kept, record]}), gold_dir.gold)
    if source.index is not None:
        with exclusive(source.index.parent):
            save(_index(source.index).with_image(record), source.index)


def push(runtime: Runtime, registry: str, paths: list[Path], on_progress: Progress | None = None,
         on_image=None) -> list[RegistryImage]:
    """Push the gold images of every source to ``registry``; each confirmed push is noted
    at once (an interrupted push keeps the ones before). ``on_image(record)`` after each."""
    sources = [source_of(p) for p in paths]
    missing = sorted({i for s in sources for i in s.images if not runtime.image_exists(i)})
    if missing:
        raise BadInput(f"gold image {missing[0]} is not in the Docker engine; pull it ('cligym images pull') "
                       "or load it ('cligym images load') first")
    done: dict[str, RegistryImage] = {}
    for source in sources:
        for image in source.images:
            if image not in done:
                done[image] = runtime.push_image(image, registry, on_progress)
                if on_image:
                    on_image(done[image])
            note(source, done[image])
    return [done[i] for i in sorted(done)]


def records_of(path: Path, registry: str | None = None) -> list[RegistryImage]:
    """The newest registry record of each gold image of ``path`` (in ``registry`` if given),
    or BadInput naming an image that was never pushed there."""
    source = source_of(path)
    pushed = RegistryIndex(images=[r for g in source.golds for r in g.load().registry_images])
    index = _index(source.index)
    found = []
    for image in source.images:
        record = pushed.find(image, registry) or index.find(image, registry)
        if record is None:
            where = f" to {registry}" if registry else ""
            raise BadInput(f"{path}: gold image {image} was never pushed{where} ('cligym images push REGISTRY {path}')")
        found.append(record)
    return found


def pull(runtime: Runtime, paths: list[Path], registry: str | None = None, on_progress: Progress | None = None,
         on_image=None) -> list[tuple[RegistryImage, bool]]:
    """Make every gold image of the sources present from its registry, by digest; each with
    whether it was pulled (False: already present). Records are checked before any pull."""
    records: dict[str, RegistryImage] = {}
    for path in paths:
        for record in records_of(path, registry):
            records.setdefault(record.image, record)
    pulled = []
    for image in sorted(records):
        pulled.append((records[image], runtime.pull_image(records[image], on_progress)))
        if on_image:
            on_image(*pulled[-1])
    return pulled


def still_served(runtime: Runtime, registry: str, image: str, record: RegistryImage | None,
                 on_progress: Progress | None = None) -> RegistryImage:
    """``record`` while the registry still serves its digest for its tag, else ``image``
    pushed now (the caller notes the new record)."""
    if record is not None and runtime.served_digest(record.reference) == record.digest:
        return record
    if not runtime.image_exists(image):
        raise BadInput(f"gold image {image} is neither in the Docker engine nor in {registry}")
    return runtime.push_image(image, registry, on_progress)


def pinned_bases(runtime: Runtime, registry: str, run_dir: Path, images: list[str],
                 on_progress: Progress | None = None) -> dict[str, RegistryImage]:
    """Each of ``images`` (gold images of the run) as ``registry`` serves it: the run's own
    record when the registry still serves that digest for its tag, else pushed now (and
    noted in the run's registry.json)."""
    source = Source(run_dir, images, [], RunDir(run_dir).registry)
    index = _index(source.index)
    found = {}
    for image in images:
        known = index.find(image, registry)
        found[image] = still_served(runtime, registry, image, known, on_progress)
        if found[image] is not known:
            note(source, found[image])
    return found


def push_task_images(runtime: Runtime, registry: str, out: ExportDir,
                     on_progress: Progress | None = None) -> dict[str, RegistryImage]:
    """Each exported Harbor task built (gold + ΔD, from its own Dockerfile) and pushed to
    ``registry``; its ``task.toml`` then names the image by digest in ``[environment]
    docker_image``, so a backend that cannot build runs it as it is (the Dockerfile stays
    for those that build). The local build is removed once pushed; by task name."""
    pushed = {}
    for task in out.task_dirs():
        if task.require_format() != "harbor":
            raise BadInput("--task-images applies to Harbor tasks (task.toml's [environment] docker_image)")
        text = task.dockerfile.read_text(encoding="utf-8")
        local = ImageKind.PUBLISH.tag(task.name, hashlib.sha256(text.encode()).hexdigest()[:12])
        runtime.build(task.context, local, nocache=True)  # no step shared with another process's build
        try:
            record = runtime.push_image(local, registry, on_progress)
        finally:
            runtime.remove_image(local)
        config = tomllib.loads(task.task_toml.read_text(encoding="utf-8"))
        config.setdefault("environment", {})["docker_image"] = record.pinned
        write_atomic(task.task_toml, tomli_w.dumps(config))
        pushed[task.name] = record
    return pushed
