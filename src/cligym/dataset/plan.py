"""PROJECTS.toml → the plan of a dataset build: each project's key, budgets and seed.

A project's seed is derived from the dataset's seed and the project's key alone, so adding,
removing or reordering projects leaves every other project's tasks as they were, and the
same seed gives the same tasks whatever the number of workers.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pydantic import ValidationError

from cligym.errors import BadInput
from cligym.layout import safe_id
from cligym.models.dataset import DatasetPlan, PlannedProject, ProjectEntry, ProjectsFile
from cligym.models.io import read_toml


def project_key(entry: ProjectEntry) -> str:
    """The project's name in the dataset: its ``name``, else one made from its source
    (``markupsafe==3.0.2`` → ``markupsafe-3.0.2``) or image."""
    if entry.name:
        raw = entry.name
    elif entry.source:
        raw = entry.source if "==" in entry.source else Path(entry.source).name or entry.source
    else:
        raw = entry.image or ""
    key = re.sub(r"[^A-Za-z0-9_.+@-]+", "-", raw.replace("==", "-")).strip("-.") or "project"
    return safe_id(key[:100], "project key")


def read_projects(path: Path) -> ProjectsFile:
    data = read_toml(path, "project list")
    try:
        projects = ProjectsFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadInput(f"{path}: {where}: {first['msg']}") from exc
    if not projects.project:
        raise BadInput(f"{path} lists no project (add a [[project]] table with a source)")
    return projects


def make_plan(path: Path, seed: int, *, bundle: bool = True, registry: str | None = None) -> DatasetPlan:
    """Read PROJECTS.toml and resolve each project (relative paths are relative to the file)."""
    projects = read_projects(path)
    base = path.resolve().parent
    planned: list[PlannedProject] = []
    for index, entry in enumerate(projects.project):
        if not entry.source and not entry.image:
            raise BadInput(f"{path}: project {index + 1} has neither a source nor an image")
        if entry.image and not entry.test_cmd:
            raise BadInput(f"{path}: project {index + 1}: an image needs a test_cmd")
        key = project_key(entry)
        if any(p.key == key for p in planned):
            raise BadInput(f"{path}: two projects are named {key!r}; give one a distinct name")
        source = entry.source
        if source and "==" not in source and (base / source).is_dir():
            source = str((base / source).resolve())  # a local project directory
        profile = str((base / entry.profile).resolve()) if entry.profile else None
        if profile and not Path(profile).is_file():
            raise BadInput(f"{path}: project {key}: the profile {entry.profile} does not exist")
        planned.append(PlannedProject(
            key=key, source=source, profile=profile, image=entry.image, test_cmd=entry.test_cmd,
            attempts=entry.attempts or projects.attempts, tasks=entry.tasks or projects.tasks,
            seed=int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:8], 16)))
    return DatasetPlan(seed=seed, projects=planned, bundle=bundle, registry=registry)
