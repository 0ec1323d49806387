"""Host-side wheelhouse and the offline, content-addressed build of a gold image."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

from cligym.config import LABEL, home
from cligym.errors import GoldFailed
from cligym.gold.source import pip, sha256_file
from cligym.runtime import Runtime

VENV = "/opt/venv"
WORKDIR = "/testbed"
PYTHON = f"{VENV}/bin/python"

DOCKERFILE = """\
# gold environment for {name} {version}, built offline from a host-side wheelhouse
FROM {base} AS install
LABEL {label}=1
COPY wheels /tmp/wheels
COPY requirements.txt /tmp/requirements.txt
RUN python3 -m venv {venv} \\
 && {venv}/bin/pip install --no-index --no-cache-dir --disable-pip-version-check \\
      --find-links /tmp/wheels -r /tmp/requirements.txt

FROM {base}
LABEL {label}=1 {label}.project={name} {label}.version={version}
COPY --from=install {venv} {venv}
COPY project {workdir}
WORKDIR {workdir}
ENV VIRTUAL_ENV={venv} PATH={venv}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
"""


def _pip_error(stderr: str) -> str:
    missing = re.search(r"No matching distribution found for (\S+)", stderr)
    if missing:
        return f"no installable distribution of {missing.group(1)} on the package index"
    failed = re.search(r"Failed (?:to )?build(?:ing wheel for)? (\S+)", stderr)
    errors = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith(("ERROR:", "error:"))]
    detail = errors[-1] if errors else (stderr.strip().splitlines() or ["pip failed"])[-1]
    if failed:
        return f"building {failed.group(1)} failed ({detail[:200]})"
    return detail[:300]


def fill_wheelhouse(project: Path, requirements: list[str], name: str, key_material: str) -> tuple[Path, str]:
    """Build or download wheels for the project and its test requirements, on the host.

    Returns the wheelhouse directory and the file name of the project's own wheel. The
    directory is keyed by the inputs, so a second call with the same inputs is free.
    """
    key = hashlib.sha256(f"{key_material}|{sorted(requirements)}".encode()).hexdigest()[:16]
    house = home() / "wheelhouse" / f"{canonicalize_name(name)}-{key}"
    index = house / "cligym-wheelhouse.json"
    if index.is_file():
        return house, json.loads(index.read_text())["project_wheel"]
    partial = house.with_name(house.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        proc = pip("wheel", "--wheel-dir", str(partial), str(project), *requirements)
        if proc.returncode != 0:
            raise GoldFailed(f"installing {name} with its test requirements failed: {_pip_error(proc.stderr)}")
        wheels = [w for w in partial.glob("*.whl")]
        own = [w.name for w in wheels if canonicalize_name(parse_wheel_filename(w.name)[0]) == canonicalize_name(name)]
        if not own:
            raise GoldFailed(f"pip built no wheel for {name}")
        (partial / index.name).write_text(json.dumps({"project_wheel": own[0], "requirements": requirements}))
        shutil.rmtree(house, ignore_errors=True)
        os.replace(partial, house)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return house, own[0]


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def context_digest(context: Path) -> str:
    """A digest of every file's path, mode and content in a build context."""
    digest = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(context).as_posix()
        if path.is_symlink():
            digest.update(f"L {rel} {os.readlink(path)}\n".encode())
        else:
            digest.update(f"F {rel} {path.stat().st_mode & 0o777:o} {sha256_file(path)}\n".encode())
    return digest.hexdigest()


def image_tag(name: str, version: str, digest: str) -> str:
    safe_version = re.sub(r"[^A-Za-z0-9_.-]", "_", version)[:60]
    return f"cligym/gold-{canonicalize_name(name)}:{safe_version}-{digest[:12]}"


def build_gold_image(
    runtime: Runtime,
    *,
    name: str,
    version: str,
    project_tree: Path,
    wheelhouse: Path,
    project_wheel: str,
    requirements: list[str],
    base_image: str,
    base_image_id: str,
    nocache: bool = False,
    on_log: Callable[[str], None] | None = None,
) -> tuple[str, bool]:
    """Build the gold image; returns (tag, built_now). An identical context reuses the tag."""
    root = home() / "build"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        context = Path(tmp)
        (context / "wheels").mkdir()
        for wheel in wheelhouse.glob("*.whl"):
            _link_or_copy(wheel, context / "wheels" / wheel.name)
        lines = [f"/tmp/wheels/{project_wheel}", *requirements]
        (context / "requirements.txt").write_text("\n".join(lines) + "\n")
        shutil.copytree(project_tree, context / "project", symlinks=True)
        (context / "Dockerfile").write_text(
            DOCKERFILE.format(
                name=canonicalize_name(name), version=version, base=base_image, label=LABEL,
                venv=VENV, workdir=WORKDIR,
            )
        )
        (context / ".base-image-id").write_text(base_image_id)
        tag = image_tag(name, version, context_digest(context))
        if runtime.image_exists(tag) and not nocache:
            return tag, False
        (context / ".dockerignore").write_text(".base-image-id\n")
        runtime.build(context, tag, nocache=nocache, on_log=on_log)
        return tag, True
