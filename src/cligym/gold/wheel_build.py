"""The build container: the one place a project's build backend (its ``setup.py``) runs.

Building a wheel runs the project's code, so it happens in a container, never on the host:
a container of the build image (the base image plus a C toolchain and Python headers, so
C extensions build), with no network, cligym's limits, removed when the build ends. The
host hands it the source (an sdist or a project tree) and the build requirements as
wheels, pip's own wheel among them; ``pip wheel --no-index --find-links``, run from that
pip wheel by the image's ``python3`` (no venv to make), builds from those alone, and the
wheel is copied back out. A failing build raises GoldFailed naming its real cause (the backend's
own last error line), not pip's summary.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cligym.config import DEFAULT_BASE_IMAGE, LABEL
from cligym.errors import GoldFailed
from cligym.runtime import Runtime, Session
from cligym.runtime.base_image import BASE_PACKAGES, build_base_image

#: The build image made next to the default base image (same Debian, so the same Python).
BUILD_IMAGE = f"{DEFAULT_BASE_IMAGE}-build"
#: What it adds to the base image: compilers and headers for C and C++ extensions.
BUILD_PACKAGES = (*BASE_PACKAGES, "gcc", "g++", "make", "libc6-dev", "python3-dev", "pkg-config")
#: Where things go inside the build container.
BUILD_ROOT = "/build"
BUILD_WHEELS = f"{BUILD_ROOT}/wheels"
#: Seconds one wheel build may take.
BUILD_TIMEOUT = 1800

#: pip's words for a requirement it found no (usable) distribution of.
MISSING = re.compile(r"No matching distribution found for (\S+)")
#: ``file.c:1:10: fatal error: foo.h: No such file or directory`` and the like.
_COMPILER = re.compile(r"^\S+:\d+(?::\d+)?: (?:fatal )?error: ")
#: ``RuntimeError: boom``, ``subprocess.CalledProcessError: ...`` (a raised exception).
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Failure|Interrupt)(?:\[[^\]]*\])?: \S")
#: pip's own summary lines around a backend's output: never the cause.
_PIP_NOISE = re.compile(
    r"^(?:error: subprocess-exited-with-error|ERROR: Failed (?:building|to build)|ERROR: Could not build"
    r"|note: |hint: |× |╰─> |│ |\[end of output\]|\[\d+ lines? of output\]|exit code: |Running setup.py)"
)


class MissingBuildRequirement(Exception):
    """The backend asked for a build requirement that was not downloaded (e.g. setup_requires)."""

    def __init__(self, requirement: str) -> None:
        super().__init__(requirement)
        self.requirement = requirement


def build_image_for(runtime: Runtime, base_image: str, on_log: Callable[[str], None] | None = None) -> str:
    """The image wheels are built in: for the default base its build image (made with
    mmdebstrap when missing), for any other base image the base itself (which then needs
    its own compiler for C extensions)."""
    if base_image != DEFAULT_BASE_IMAGE:
        return base_image
    if not runtime.image_exists(BUILD_IMAGE):
        build_base_image(runtime, BUILD_IMAGE, packages=BUILD_PACKAGES, on_log=on_log)
    return BUILD_IMAGE


def build_error(output: str) -> str:
    """The real cause of a failed build, from pip's output: the first compiler error, else
    the last exception the backend raised, else its last ``error:`` line, else the last
    line that is not pip's own summary."""
    lines = [ln.strip().lstrip("│║ ").strip() for ln in output.splitlines()]
    lines = [ln for ln in lines if ln]
    for pattern, pick in ((_COMPILER, 0), (_EXCEPTION, -1)):
        hits = [ln for ln in lines if pattern.search(ln)]
        if hits:
            return hits[pick][:300]
    meaningful = [ln for ln in lines if not _PIP_NOISE.search(ln)]
    errors = [ln for ln in meaningful if ln.lower().startswith("error:")]
    return (errors or meaningful or ["the build failed without output"])[-1][:300]


class Builder:
    """One build container, kept for every wheel a gold run builds (one venv set-up)."""

    def __init__(self, box: Session, image: str) -> None:
        self._box = box
        self._image = image
        self._builds = 0

    @classmethod
    @contextmanager
    def open(cls, runtime: Runtime, image: str) -> Iterator[Builder]:
        """A started build container; removed on every way out."""
        with runtime.session(image, labels={f"{LABEL}.role": "build"}) as box:
            yield cls(box, image)

    def build(self, source: Path, requirements: Path, out_dir: Path, what: str) -> Path:
        """Build the wheel of ``source`` (an sdist file or a project tree) with the wheels
        in ``requirements`` only (pip's wheel among them); returns the wheel, copied into
        ``out_dir`` on the host."""
        pips = sorted(requirements.glob("pip-*.whl"))
        if not pips:
            raise GoldFailed(f"no pip wheel among the build requirements of {what}")
        self._builds += 1
        src, out = f"{BUILD_ROOT}/src/{self._builds}", f"{BUILD_ROOT}/out/{self._builds}"
        made = self._box.exec(["mkdir", "-p", src, out, BUILD_WHEELS], timeout=60)
        if not made.ok:
            raise GoldFailed(f"cannot prepare the build container: {made.output.strip()[-200:]}")
        target = f"{src}/{source.name}"
        if source.is_dir():
            self._box.upload_dir(source, target)
        else:
            self._box.put_files({target: (source.read_bytes(), 0o644)})
        self._box.upload_dir(requirements, BUILD_WHEELS)
        result = self._box.exec(
            ["python3", f"{BUILD_WHEELS}/{pips[-1].name}/pip", "wheel", "--no-deps", "--no-index", "--no-cache-dir",
             "--disable-pip-version-check", "--find-links", BUILD_WHEELS, "--wheel-dir", out, target],
            timeout=BUILD_TIMEOUT, env={"PIP_NO_INPUT": "1", "PIP_CONFIG_FILE": "/dev/null"},
        )
        if result.timed_out:
            raise GoldFailed(f"building {what} in {self._image} took longer than {BUILD_TIMEOUT} s")
        if not result.ok:
            missing = MISSING.search(result.output)
            if missing:
                raise MissingBuildRequirement(missing.group(1))
            raise GoldFailed(f"building {what} failed: {build_error(result.output)}")
        return self._copy_out(out, out_dir, what)

    def _copy_out(self, out: str, out_dir: Path, what: str) -> Path:
        data = self._box.get_archive(out)
        if data is None:
            raise GoldFailed(f"building {what} left no output in the build container")
        wheels: list[Path] = []
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            for member in tar.getmembers():
                name = Path(member.name).name
                handle = tar.extractfile(member) if member.isfile() and name.endswith(".whl") else None
                if handle is not None:
                    (out_dir / name).write_bytes(handle.read())
                    wheels.append(out_dir / name)
        if len(wheels) != 1:
            raise GoldFailed(f"building {what} made {len(wheels)} wheels instead of one")
        return wheels[0]
