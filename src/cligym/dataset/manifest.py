"""Harbor's dataset manifest (``dataset.toml``) for the dataset's task directories.

Each task is listed by the ``org/name`` of its task.toml's ``[task]`` section with its
content digest, computed the way Harbor's ``harbor sync`` computes it (so ``sync`` finds
nothing to change): the task's publishable files — task.toml, instruction.md, README.md
when present, and every file under environment/, tests/, solution/ and steps/, minus
Harbor's default ignores — sorted by their path relative to the task; for each, the line
``<path>\\0<sha256 of its bytes>\\n`` feeds one SHA-256, written ``sha256:<hex>``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import tomllib
from pathlib import Path

import tomli_w

from cligym.layout import ExportDir, TaskDir
from cligym.models.io import write_atomic

#: What Harbor leaves out of a task's digest when the task has no .gitignore of its own.
IGNORED_NAMES = ("*.pyc", ".DS_Store", "*.swp", "*.swo", "*~")
IGNORED_DIRS = ("__pycache__",)
#: Directories of a task whose files all count (``steps``: multi-step tasks).
CONTENT_DIRS = ("environment", "tests", "solution", "steps")
SINGLE_FILES = ("README.md",)


def _ignored(relative: str) -> bool:
    parts = relative.split("/")
    return any(p in IGNORED_DIRS for p in parts[:-1]) or any(fnmatch.fnmatchcase(parts[-1], g) for g in IGNORED_NAMES)


def task_files(task: TaskDir) -> list[str]:
    """The task's files that its digest covers, as sorted POSIX paths relative to it."""
    root = task.path
    found = [p for p in (task.task_toml, task.instruction, *(root / n for n in SINGLE_FILES)) if p.is_file()]
    for name in CONTENT_DIRS:  # rglob of a missing folder finds nothing
        found += [p for p in (root / name).rglob("*") if p.is_file()]
    relative = {p.relative_to(root).as_posix() for p in found}
    return sorted(r for r in relative if not _ignored(r))


def task_digest(task: TaskDir) -> str:
    outer = hashlib.sha256()
    for relative in task_files(task):
        with (task.path / relative).open("rb") as handle:
            outer.update(f"{relative}\0{hashlib.file_digest(handle, 'sha256').hexdigest()}\n".encode())
    return f"sha256:{outer.hexdigest()}"


def write_manifest(harbor: ExportDir, tasks: list[str], path: Path) -> Path:
    """Write the manifest ``path`` listing ``tasks`` (directories of ``harbor``), sorted by name;
    the dataset is ``cligym/<the name of harbor's parent>``, in the characters Harbor allows."""
    refs = sorted((tomllib.loads(harbor.task(t).task_toml.read_text(encoding="utf-8"))["task"]["name"],
                   task_digest(harbor.task(t))) for t in tasks)  # the org/name of the task.toml's [task]
    folder = Path(harbor.path).resolve().parent.name or "dataset"
    name = "".join(c if c.isalnum() or c in "._-" else "-" for c in folder).strip(".-") or "dataset"
    document = {
        "dataset": {"name": f"cligym/{name}", "description": "Environment-repair tasks made by cligym",
                    "keywords": ["environment-repair"]},
        "tasks": [{"name": ref_name, "digest": digest} for ref_name, digest in refs],
    }
    write_atomic(path, tomli_w.dumps(document))
    return path
