"""Getting a project's source onto the host: a PyPI sdist or a local directory.

Everything that talks to the package index runs the host's own pip, so the host's pip
configuration (index, certificates, constraints) applies.
"""

from __future__ import annotations

import configparser
import hashlib
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cligym.config import home
from cligym.errors import BadInput

PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
TEST_KEYS = ("test", "tests", "testing")
#: What is never copied from a project tree into an image.
JUNK = {".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", ".pytest_cache",
        ".mypy_cache", ".ruff_cache", "build", "dist", "node_modules", ".eggs"}
TEST_FILE = re.compile(r"(^test_.*|.*_test)\.py$")


def pip(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


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


def _available_versions(name: str) -> list[str] | None:
    proc = pip("index", "versions", name, timeout=300)
    if proc.returncode != 0:
        return None
    for line in proc.stdout.splitlines():
        if line.strip().startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    return []


def fetch_sdist(name: str, version: str | None) -> Path:
    """Download (or reuse) the sdist of ``name==version``; errors say which part is wrong."""
    target = f"{name}=={version}" if version else name
    cache = home() / "sdists" / canonicalize_name(name) / (version or "latest")
    archives = lambda: [p for p in cache.glob("*") if p.name.endswith((".tar.gz", ".zip", ".tar.bz2"))]  # noqa: E731
    if version and len(archives()) == 1:
        return archives()[0]
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    proc = pip("download", "--no-deps", "--no-binary", ":all:", "-d", str(cache), target)
    found = archives()
    if proc.returncode != 0 or len(found) != 1:
        shutil.rmtree(cache, ignore_errors=True)
        versions = _available_versions(name)
        if versions is None:
            raise BadInput(f"package {name!r} was not found on the package index")
        if version and version not in versions:
            shown = ", ".join(versions[:5]) or "none"
            raise BadInput(f"{name} has no version {version} on the package index (newest: {shown})")
        raise BadInput(f"{target} has no usable source distribution (sdist) on the package index")
    return found[0]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
    for item in path.rglob("*.py"):
        if TEST_FILE.match(item.name) and not (set(item.relative_to(path).parts) & JUNK):
            return True
    return False


def _group(groups: dict, key: str, seen: set[str]) -> list[str]:
    out: list[str] = []
    for item in groups.get(key, []):
        if isinstance(item, dict) and "include-group" in item:
            inner = item["include-group"]
            if inner not in seen:
                seen.add(inner)
                out += _group(groups, inner, seen)
        elif isinstance(item, str):
            out.append(item)
    return out


def declared_extras(path: Path) -> dict[str, list[str]]:
    """All optional-dependency extras a project declares (pyproject or setup.cfg)."""
    extras: dict[str, list[str]] = {}
    pyproject = path / "pyproject.toml"
    if pyproject.is_file():
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        extras.update(data.get("project", {}).get("optional-dependencies", {}) or {})
    setup_cfg = path / "setup.cfg"
    if setup_cfg.is_file():
        cfg = configparser.ConfigParser()
        cfg.read(setup_cfg, encoding="utf-8")
        if cfg.has_section("options.extras_require"):
            for key, value in cfg.items("options.extras_require"):
                extras.setdefault(key, [ln.strip() for ln in value.splitlines() if ln.strip()])
    return extras


def declared_test_requirements(path: Path, project: str) -> list[str]:
    """Test requirements from the project's metadata.

    Looks at optional-dependencies extras and dependency groups named test/tests/testing,
    then at requirements files for tests; a requirement on the project itself with extras
    is expanded into those extras' requirements.
    """
    reqs: list[str] = []
    extras = declared_extras(path)
    groups: dict = {}
    pyproject = path / "pyproject.toml"
    if pyproject.is_file():
        groups = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("dependency-groups", {}) or {}
    for key in TEST_KEYS:
        reqs += extras.get(key, [])
    for key in TEST_KEYS:
        reqs += _group(groups, key, {key})
    if not reqs:
        for name in ("requirements/tests.in", "requirements/test.in", "requirements/tests.txt",
                     "requirements/test.txt", "requirements-test.txt", "requirements-tests.txt",
                     "test-requirements.txt", "tests/requirements.txt"):
            req_file = path / name
            if req_file.is_file():
                reqs += [ln.split("#")[0].strip() for ln in req_file.read_text().splitlines()
                         if ln.split("#")[0].strip() and not ln.lstrip().startswith("-")]
                break
    return expand_self(reqs, project, extras)


def expand_self(reqs: list[str], project: str, extras: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    todo = list(reqs)
    while todo:
        raw = todo.pop(0)
        try:
            req = Requirement(raw)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == canonicalize_name(project):
            for extra in sorted(req.extras):
                if extra not in seen:
                    seen.add(extra)
                    todo += extras.get(extra, [])
            continue
        if raw not in out:
            out.append(raw)
    return out
