"""Getting a project's source onto the host: a PyPI sdist or a local directory.

The host only downloads files and reads metadata; nothing here runs a project's code.
The sdist is fetched from the indexes the host's pip is configured with
(``cligym.gold.index``); wheels are downloaded by the host's own pip (``index.pip``) with
``--only-binary :all:``, so the host's pip configuration (index, certificates) applies.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tarfile
import zipfile
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cligym.config import home
from cligym.errors import BadInput, GoldFailed
from cligym.gold.index import (
    SDIST_SUFFIXES,
    Link,
    download,
    parse_filename,
    pick_sdist,
    project_links,
    versions,
)

PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
#: What is never copied from a project tree into an image.
JUNK = {".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", ".pytest_cache",
        ".mypy_cache", ".ruff_cache", "build", "dist", "node_modules", ".eggs"}
TEST_FILE = re.compile(r"(^test_.*|.*_test|^tests?)\.py$")
PYTEST_DEFAULT = re.compile(r"(^test_.*|.*_test)\.py$")


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``name==version`` or ``name`` → (name, version or None)."""
    try:
        req = Requirement(spec)
    except InvalidRequirement as exc:
        raise BadInput(f"{spec!r} is not NAME==VERSION, a project directory, or --image") from exc
    pins = [s for s in req.specifier if s.operator in ("==", "===")]
    if req.extras or req.marker or (req.specifier and not pins) or len(pins) > 1:
        raise BadInput(f"{spec!r}: give an exact version as NAME==VERSION")
    return req.name, pins[0].version if pins else None


def fetch_sdist(name: str, version: str | None) -> Path:
    """Download (or reuse) the sdist of ``name==version``; errors say which part is wrong.

    Only the file is fetched (see ``cligym.gold.index``): nothing of the project runs here.
    """
    target = f"{name}=={version}" if version else name
    cache = home() / "sdists" / canonicalize_name(name) / (version or "latest")
    if version and (cached := _cached(cache)):
        return cached
    links = project_links(name)
    if links is None:
        raise BadInput(f"package {name!r} was not found on the package index")
    link = pick_sdist(links, f"=={version}" if version else "")
    if link is None:
        offered = versions(links)
        if version and _normal(version) not in offered:
            shown = ", ".join(offered[:5]) or "none"
            raise BadInput(f"{name} has no version {version} on the package index (newest: {shown})")
        raise BadInput(f"{target} has no usable source distribution (sdist) on the package index")
    return _download(link, cache)


def fetch_matching_sdist(requirement: str) -> Path | None:
    """The sdist of the newest version meeting ``requirement`` (``name<2,>=1``), or None
    when the index has none. Downloaded only, like ``fetch_sdist``."""
    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return None
    links = project_links(req.name)
    link = pick_sdist(links, str(req.specifier)) if links else None
    if link is None:
        return None
    _, version = parse_filename(link.filename) or (None, "unknown")
    cache = home() / "sdists" / canonicalize_name(req.name) / str(version)
    return _cached(cache) or _download(link, cache)


def _cached(cache: Path) -> Path | None:
    """The one sdist in a cache folder, or None."""
    found = [p for p in cache.glob("*") if p.name.endswith(SDIST_SUFFIXES)]
    return found[0] if len(found) == 1 else None


def _normal(version: str) -> str:
    try:
        return str(Version(version))
    except InvalidVersion:
        return version


def _download(link: Link, cache: Path) -> Path:
    shutil.rmtree(cache, ignore_errors=True)
    try:
        return download(link, cache)
    except OSError as exc:
        shutil.rmtree(cache, ignore_errors=True)
        raise GoldFailed(f"cannot download {link.filename} from the package index: {exc}") from exc


def sha256_file(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def extract_sdist(archive: Path, dest: Path) -> Path:
    """Unpack an sdist into ``dest`` (its single top directory stripped); returns ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    staging = dest.with_name(dest.name + ".unpack")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(staging)
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(staging, filter="data")
        tops = list(staging.iterdir())
        root = tops[0] if len(tops) == 1 and tops[0].is_dir() else staging
        copy_tree(root, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


def copy_tree(src: Path, dest: Path) -> None:
    """Copy a project tree, leaving out VCS data, caches, virtualenvs and build output."""
    shutil.copytree(
        src,
        dest,
        dirs_exist_ok=True,
        symlinks=True,
        ignore=lambda d, names: [
            n for n in names if n in JUNK or n.endswith((".egg-info", ".pyc", ".pyo"))
        ],
    )


def check_project_dir(path: Path) -> None:
    if not path.is_dir():
        raise BadInput(f"{path} is not a directory")
    if not any((path / f).is_file() for f in PROJECT_FILES):
        raise BadInput(f"{path} is not a Python project (no pyproject.toml, setup.py or setup.cfg)")


def has_tests(path: Path) -> bool:
    return bool(_test_files(path))


def _test_files(path: Path) -> list[Path]:
    return [item for item in sorted(path.rglob("*.py"))
            if TEST_FILE.match(item.name) and not (set(item.relative_to(path).parts) & JUNK)]


def default_test_paths(path: Path) -> list[str]:
    """What to name on pytest's command line when its default file patterns (test_*.py,
    *_test.py) find nothing: the project's test.py / tests.py files. Else nothing (pytest
    collects by its configuration)."""
    files = _test_files(path)
    if any(PYTEST_DEFAULT.match(f.name) for f in files):
        return []
    return [str(f.relative_to(path)) for f in files]
