"""The wheelhouse a gold image installs from: downloaded on the host, built in a container.

The work divides so that no package code runs on the host:

- the host downloads files only: the build requirements of the project (the static
  ``[build-system] requires``) and every dependency and test requirement as wheels, with
  its own pip and ``--only-binary :all:`` for the base image's Python version (a wheel
  is unpacked, never run, so pip prepares it without executing anything);
- a build container (``cligym.gold.wheel_build``) builds the project's wheel from its sdist
  or tree, and the wheel of any requirement that has no wheel on the index, from that
  requirement's sdist (downloaded like the project's), with the network off.

The directory is keyed by its inputs (source digest, requirements, Python version, build
image), so a second run with the same inputs reuses it without starting a container.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from packaging.utils import canonicalize_name

from cligym.config import home
from cligym.errors import GoldFailed
from cligym.gold.index import pip
from cligym.gold.metadata import SourceTree
from cligym.gold.source import extract_sdist, fetch_matching_sdist
from cligym.gold.wheel_build import MISSING, Builder, MissingBuildRequirement
from cligym.runtime import Runtime

#: The record that marks a finished wheelhouse.
INDEX = "cligym-wheelhouse.json"
#: Where build requirements go inside a wheelhouse (kept out of the image's wheels).
TOOLS = "build-requirements"
#: How many requirements without a wheel one gold run builds from their sdists.
MAX_SOURCE_BUILDS = 10
#: How often a build may ask for a build requirement that was not declared statically.
MAX_LATE_REQUIREMENTS = 3



def pip_error(stderr: str) -> str:
    """One line out of a failed pip download's output."""
    missing = MISSING.search(stderr)
    if missing:
        return f"no installable distribution of {missing.group(1)} on the package index"
    errors = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith(("ERROR:", "error:"))]
    return (errors[-1] if errors else (stderr.strip().splitlines() or ["pip failed"])[-1])[:300]


def download_wheels(dest: Path, requirements: list[str], python: str) -> subprocess.CompletedProcess[str]:
    """Wheels only, for Python ``python`` (X.Y): downloading them runs no package code.
    Wheels already in ``dest`` (built ones too) count as found."""
    return pip("download", "--only-binary", ":all:", "--python-version", python, "--dest", str(dest),
               "--find-links", str(dest), *requirements)


def fill_wheelhouse(
    runtime: Runtime,
    *,
    build_image: str,
    source: Path,
    tree: SourceTree,
    requirements: list[str],
    name: str,
    python: str,
    key_material: str,
) -> tuple[Path, str]:
    """The wheelhouse for the project (an sdist file or a tree in ``source``; its unpacked
    tree in ``tree``) and its test requirements; returns it and the project's wheel name."""
    inputs = f"{key_material}|{sorted(requirements)}|py{python}|{runtime.image_id(build_image)}"
    key = hashlib.sha256(inputs.encode()).hexdigest()[:16]
    house = home() / "wheelhouse" / f"{canonicalize_name(name)}-{key}"
    if (house / INDEX).is_file():
        return house, json.loads((house / INDEX).read_text())["project_wheel"]
    # this process's own partial folder: two processes making the same wheelhouse at once
    # (two builds of one project) must not empty each other's downloads
    partial = house.with_name(f"{house.name}.partial-{os.getpid()}-{threading.get_ident()}")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / TOOLS).mkdir(parents=True)
    try:
        with Builder.open(runtime, build_image) as builder:
            own = _build(builder, source, tree, partial, name, python)
            _download_requirements(builder, partial, own, requirements, name, python)
        shutil.rmtree(partial / TOOLS)
        (partial / INDEX).write_text(json.dumps({"project_wheel": own.name, "requirements": requirements}))
        if not (house / INDEX).is_file():  # else another process finished the same one first
            shutil.rmtree(house, ignore_errors=True)  # an unfinished one
            try:
                os.replace(partial, house)
            except OSError:  # another process's landed in between: the same wheels
                pass
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return house, own.name


def _build(builder: Builder, source: Path, tree: SourceTree, house: Path, what: str, python: str) -> Path:
    """Download the build requirements of ``tree`` (and pip, which runs the build), then
    build its wheel in the container. A requirement the backend asks for only while
    building (``setup_requires``, say) is downloaded too, and the build redone."""
    wanted = tree.build_requirements()
    for _ in range(MAX_LATE_REQUIREMENTS + 1):
        proc = download_wheels(house / TOOLS, ["pip", *wanted], python)
        if proc.returncode != 0:
            raise GoldFailed(f"downloading the build requirements of {what} failed: {pip_error(proc.stderr)}")
        try:
            return builder.build(source, house / TOOLS, house, what)
        except MissingBuildRequirement as late:
            if late.requirement in wanted:
                raise GoldFailed(f"building {what} needs {late.requirement}, which has no wheel") from None
            wanted.append(late.requirement)
    raise GoldFailed(f"building {what} kept asking for more build requirements ({', '.join(wanted)})")


def _download_requirements(
    builder: Builder, house: Path, own: Path, requirements: list[str], name: str, python: str
) -> None:
    """Download the project's dependencies and test requirements as wheels; a requirement
    with no wheel is built in the container from its sdist, and the download redone."""
    built: set[str] = set()
    for _ in range(MAX_SOURCE_BUILDS + 1):
        proc = download_wheels(house, [str(own), *requirements], python)
        if proc.returncode == 0:
            return
        missing = MISSING.search(proc.stderr)
        requirement = missing.group(1) if missing else ""
        sdist = fetch_matching_sdist(requirement) if requirement and requirement not in built else None
        if sdist is None:  # pip_error names the requirement with no distribution
            raise GoldFailed(f"installing {name} with its test requirements failed: {pip_error(proc.stderr)}")
        built.add(requirement)
        with tempfile.TemporaryDirectory(dir=house) as tmp:
            _build(builder, sdist, SourceTree(extract_sdist(sdist, Path(tmp) / "tree")), house, requirement, python)
    raise GoldFailed(f"installing {name} needs more than {MAX_SOURCE_BUILDS} requirements built from sdists")
