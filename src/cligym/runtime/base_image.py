"""The base image every gold environment is built FROM.

Where an image registry is reachable a user passes any image with ``python3`` via
``--base-image``. The default is a local name that is never pulled: when it is missing it
is built here with ``mmdebstrap`` (a minbase Debian root filesystem with python3 from
Debian's packages, using the host's own apt sources) and loaded with ``docker import``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from cligym.config import DEFAULT_BASE_IMAGE, home
from cligym.errors import CligymError
from cligym.runtime.engine import Runtime

#: Debian packages in the default base image. ca-certificates, tzdata and locales are
#: there because the environments cligym breaks use them (certificates, zone data,
#: locale definitions); python3-venv gives the gold venv its pip; tmux is what
#: Terminal-Bench 1.0 drives its agents and tests through.
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates", "tzdata", "locales", "tmux")

IMPORT_CHANGES = [
    "ENV LANG=C.UTF-8",
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    'CMD ["/bin/bash"]',
]


def host_suite() -> str:
    """The host's Debian codename (the base image matches the host, so wheels built on
    the host run in it)."""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip().strip('"') or "bookworm"
    except OSError:
        pass
    return "bookworm"


def host_apt_sources(etc: Path = Path("/etc/apt")) -> list[Path]:
    """The host's apt source files, in the order apt reads them: the main list (unless it
    holds only comments), then the parts. mmdebstrap takes them as its mirrors; the private
    apt state of ``cligym.debian`` is made from them."""
    found: list[Path] = []
    main = etc / "sources.list"
    if main.is_file() and any(
        ln.strip() and not ln.lstrip().startswith("#") for ln in main.read_text().splitlines()
    ):
        found.append(main)
    parts = etc / "sources.list.d"
    if parts.is_dir():
        found += sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources") and p.is_file())
    return found


def ensure_base_image(
    runtime: Runtime,
    ref: str = DEFAULT_BASE_IMAGE,
    *,
    on_log: Callable[[str], None] | None = None,
) -> str:
    """Make sure ``ref`` is present and return its image id.

    The default local name is built with mmdebstrap when absent; any other name is
    pulled (a registry is then the user's to provide).
    """
    if runtime.image_exists(ref):
        return runtime.image_id(ref)
    if ref != DEFAULT_BASE_IMAGE:
        runtime.pull(ref)
        return runtime.image_id(ref)
    return build_base_image(runtime, ref, on_log=on_log)


def build_base_image(
    runtime: Runtime,
    ref: str = DEFAULT_BASE_IMAGE,
    *,
    packages: tuple[str, ...] = BASE_PACKAGES,
    on_log: Callable[[str], None] | None = None,
) -> str:
    tool = shutil.which("mmdebstrap")
    if tool is None:
        raise CligymError(
            f"base image {ref} is missing and mmdebstrap is not installed; "
            "run 'bash scripts/setup.sh' (or apt-get install mmdebstrap), or pass --base-image"
        )
    sources = host_apt_sources()
    if not sources:
        raise CligymError("no apt sources on this host for mmdebstrap to build the base image from")
    workdir = home() / "base"
    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        tarball = Path(tmp) / "rootfs.tar"
        cmd = [
            tool,
            "--variant=minbase",
            f"--include={','.join(packages)}",
            "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-exclude=/usr/share/man/*",
            host_suite(),
            str(tarball),
            *map(str, sources),
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: list[str] = []
        for line in proc.stdout or ():
            lines.append(line.rstrip())
            if on_log:
                on_log(lines[-1])
        if proc.wait() != 0:
            tail = " | ".join(lines[-3:])
            raise CligymError(f"mmdebstrap could not build the base image: {tail}")
        return runtime.import_rootfs(tarball, ref, IMPORT_CHANGES)
