"""The offline, content-addressed build of a gold image from a filled wheelhouse
(``cligym.gold.wheelhouse``): the image installs the wheels with ``--no-index``.

The image keeps its wheelhouse (``WHEELHOUSE``) and a site-wide pip configuration that
points pip at it with no index, as an air-gapped machine that was set up from a local
wheelhouse would: a package removed or damaged later can be reinstalled offline
(``pip install --force-reinstall --no-deps NAME==VERSION``). Operators whose repair is such
a reinstall are offline-fair because of it.

Every shell an agent can open sees the environment the tests run with. The image's ENV puts
the venv first on PATH, and a non-login shell (``sh``, ``bash -i``) inherits it; a login
shell (``bash -l``, ``sh -l``, tmux's shells: its default shell and a harness's
``tmux new-session 'bash --login'``) reads ``/etc/profile``, which resets PATH to Debian's
default and then sources ``/etc/profile.d/*.sh``. So every gold, Python's and Debian's,
carries ``PROFILE_SCRIPT`` there (``write_profile_script``): it puts back the PATH the shell
was started with, read from the shell's own initial environment (``/proc/$$/environ``). Not
gold's PATH as a value written at build time: a broken image's ΔD may set ``ENV PATH``, and a
harness may put its own folder first (the verifier's guard does), and the tests see those; a
login shell must see them too, not have gold's value re-imposed over a fault. It sets nothing
else, since ``/etc/profile`` changes no other variable: an ``ENV`` of ΔD (``PYTHONPATH``,
``LANG``, ``HOME``...) reaches a login shell as it reaches the tests."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from packaging.utils import canonicalize_name

from cligym.config import LABEL, exclusive, home
from cligym.errors import GoldFailed
from cligym.gold.source import sha256_file
from cligym.harness.bundle import script
from cligym.runtime import ImageKind, Runtime

VENV = "/opt/venv"
WORKDIR = "/testbed"
PYTHON = f"{VENV}/bin/python"
WHEELHOUSE = "/opt/wheelhouse"
PIP_CONF = f"""\
# this machine installs Python packages from its local wheelhouse only
[global]
no-index = true
find-links = {WHEELHOUSE}
disable-pip-version-check = true
"""
#: Where login shells find the script that keeps the PATH they were given (package data
#: ``harness/scripts/keep-path.sh``); in the build context under its own name.
PROFILE_SCRIPT = "/etc/profile.d/00-keep-path.sh"
PROFILE_SOURCE = "keep-path.sh"

DOCKERFILE = """\
# gold environment for {name} {version}, built offline from its wheelhouse
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
COPY wheels {wheelhouse}
COPY pip.conf /etc/pip.conf
COPY {profile_source} {profile_script}
COPY project {workdir}
WORKDIR {workdir}
ENV VIRTUAL_ENV={venv} PATH={venv}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
"""


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def write_profile_script(context: Path) -> None:
    """The login shells' PATH script, in the build context as ``PROFILE_SOURCE``."""
    path = context / PROFILE_SOURCE
    path.write_text(script(PROFILE_SOURCE), encoding="utf-8")
    path.chmod(0o644)


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
    nocache: bool,
    on_log: Callable[[str], None],
) -> str:
    """Build the gold image; returns its tag. An identical context reuses the tag unless
    ``nocache``."""
    root = home() / "build"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        context = Path(tmp)
        (context / "wheels").mkdir()
        for wheel in wheelhouse.glob("*.whl"):
            _link_or_copy(wheel, context / "wheels" / wheel.name)
        lines = [f"/tmp/wheels/{project_wheel}", *requirements]
        (context / "requirements.txt").write_text("\n".join(lines) + "\n")
        (context / "pip.conf").write_text(PIP_CONF)
        write_profile_script(context)
        shutil.copytree(project_tree, context / "project", symlinks=True)
        (context / "Dockerfile").write_text(
            DOCKERFILE.format(
                name=canonicalize_name(name), version=version, base=base_image, label=LABEL,
                venv=VENV, workdir=WORKDIR, wheelhouse=WHEELHOUSE, profile_source=PROFILE_SOURCE,
                profile_script=PROFILE_SCRIPT,
            )
        )
        (context / ".base-image-id").write_text(base_image_id)
        return build_tagged(runtime, context, canonicalize_name(name), version, nocache=nocache, on_log=on_log)


def build_tagged(runtime: Runtime, context: Path, name: str, version: str, *, nocache: bool,
                 on_log: Callable[[str], None] | None = None) -> str:
    """Build a gold image from ``context`` (holding ``.base-image-id``, which the tag's
    digest covers and the build leaves out) under a tag of its name, version and context
    digest; an existing tag is the same image unless ``nocache``. Returns the tag."""
    safe_version = re.sub(r"[^A-Za-z0-9_.-]", "_", version)[:60]
    tag = ImageKind.GOLD.tag(name, f"{safe_version}-{context_digest(context)[:12]}")
    # one build of a gold image at a time on this host: a process that finds another one
    # building it waits and then uses that image, instead of moving the tag from under it
    with exclusive(home() / "build" / "locks" / f"{tag.replace('/', '+').replace(':', '+')}.lock"):
        if runtime.image_exists(tag) and not nocache:
            return tag
        (context / ".dockerignore").write_text(".base-image-id\n")
        # no build cache, taken or given: the install stage's image is removed once the
        # build ends (Images.build), so no other process's build of the same gold may use it
        runtime.build(context, tag, nocache=True, on_log=on_log)
        return tag


def python_version(runtime: Runtime, image: str, python: str) -> str:
    """The version of ``python`` in ``image`` (GoldFailed when it does not run)."""
    result = runtime.run(image, [python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"], timeout=120)
    if not result.ok:
        raise GoldFailed(f"{python} does not run in {image}: {result.output.strip()[-200:]}")
    return result.output.strip().splitlines()[-1]
