"""The operator model: one small class per way of breaking an environment.

An operator names a ``category``, finds ``Target``s in a probe of the gold environment
(``applies_to``), optionally reads what it needs from the gold image (``prepare``), and
then, as pure functions of the target, gives the Dockerfile lines that break it
(``apply``, the ΔD) and the shell script that repairs it (``solution``). ``symptom`` and
``hint`` describe it for issue texts: the symptom says what a user sees, the hint names
the area to look at, neither gives the fix.

Adding an operator is adding one class with the ``@register`` decorator to the file of
its category.
"""

from __future__ import annotations

import base64
import gzip
import shlex
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from cligym.invert.probe import Probe

CATEGORIES = (
    "dynamic_linking", "dependency_versions", "package_metadata", "import_system", "bytecode",
    "filesystem_permissions", "environment_variables", "locale_encoding", "time_zone_data",
    "certificates", "system_files", "interpreter_venv", "test_configuration", "code",
)

#: The interpreter of the base image, used by ΔD steps that need Python: it stays usable
#: even when an operator breaks the project's virtualenv.
SYSTEM_PYTHON = "/usr/bin/python3"
#: Largest file whose original bytes a solution script carries.
MAX_EMBED = 2 * 1024 * 1024


class Target(BaseModel):
    """What one operator breaks: a path and/or name, details, and who touches it."""

    path: str = ""
    name: str = ""
    data: dict[str, Any] = Field(default_factory=dict)
    touching: list[str] = Field(default_factory=list)

    @property
    def key(self) -> str:
        return self.path or self.name


class GoldFiles:
    """Reads files of the gold image (from one long-lived container); cached."""

    def __init__(
        self, read: Callable[[str], bytes | None], archive: Callable[[str], bytes | None] | None = None
    ) -> None:
        self._read = read
        self._archive = archive
        self._cache: dict[str, bytes | None] = {}

    @classmethod
    def of_session(cls, session) -> GoldFiles:
        return cls(session.get_file, session.get_archive)

    def read(self, path: str) -> bytes | None:
        """The bytes of a regular file (symlinks are followed), or None."""
        if path not in self._cache:
            self._cache[path] = self._read(path)
        return self._cache[path]

    def tar_gz(self, path: str) -> bytes | None:
        """A gzipped tar of a file or directory tree (top entry named by its basename)."""
        if self._archive is None:
            return None
        raw = self._archive(path)
        return gzip.compress(raw, mtime=0) if raw is not None else None


class Operator:
    name: ClassVar[str]
    category: ClassVar[str]
    symptom: ClassVar[str]
    hint: ClassVar[str]
    #: Operators that break every test (e.g. the interpreter) are sampled less often.
    broad: ClassVar[bool] = False
    #: Position of this operator's ΔD lines when several are combined: operators that
    #: break what later build steps need (shared libraries, the interpreter) go last.
    order: ClassVar[int] = 50

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        raise NotImplementedError

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        """Read what apply/solution need from the gold image; None if it cannot be used."""
        return target

    def apply(self, target: Target) -> list[str]:
        raise NotImplementedError

    def solution(self, target: Target) -> str:
        raise NotImplementedError

    def describe(self, target: Target) -> dict[str, str]:
        """Symptom and hint texts with the target filled in (never the fix)."""
        values = {"name": target.name, "path": target.path, **{k: str(v) for k, v in target.data.items()}}
        return {"symptom": self.symptom.format_map(_Missing(values)), "hint": self.hint.format_map(_Missing(values))}


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


REGISTRY: dict[str, Operator] = {}


def register(cls: type[Operator]) -> type[Operator]:
    if cls.category not in CATEGORIES:
        raise ValueError(f"operator {cls.__name__}: unknown category {cls.category}")
    if cls.name in REGISTRY:
        raise ValueError(f"operator name {cls.name} is registered twice")
    REGISTRY[cls.name] = cls()
    return cls


# ---- helpers shared by operators -------------------------------------------------------


def q(text: str) -> str:
    return shlex.quote(text)


def run_python(code: str) -> str:
    """A RUN line executing ``code`` with the base image's Python (code travels as base64)."""
    encoded = base64.b64encode(code.encode()).decode()
    return f"RUN echo {encoded} | base64 -d | {SYSTEM_PYTHON}"


def write_file_line(path: str, content: bytes, mode: str | None = None) -> str:
    """A RUN line (or part of a solution) writing ``content`` to ``path``."""
    encoded = base64.b64encode(content).decode()
    line = f"mkdir -p {q(path.rsplit('/', 1)[0] or '/')} && echo {encoded} | base64 -d > {q(path)}"
    if mode:
        line += f" && chmod {mode} {q(path)}"
    return line


def restore_file(path: str, content: bytes, mode: str = "644") -> str:
    """Solution lines that put the original bytes of ``path`` back."""
    return write_file_line(path, content, mode)


def restore_tree(path: str, tar_gz: bytes) -> str:
    """Solution lines that put a file or directory tree back from a gzipped tar of it."""
    encoded = base64.b64encode(tar_gz).decode()
    parent = path.rstrip("/").rsplit("/", 1)[0] or "/"
    return f"rm -rf {q(path)} && echo {encoded} | base64 -d | tar xzf - -C {q(parent)}"


#: Shared objects that the shell, coreutils and the harness need. Breaking them breaks the
#: verifier itself (it could not even write a reward), so no operator may target them.
PROTECTED_LIBS = ("libc.so", "libc-", "ld-linux", "libm.so", "libtinfo", "libselinux", "libpcre",
                  "libacl", "libattr", "libgmp", "libcrypt.so", "libcap", "libdl", "libpthread")


def protected(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.startswith(PROTECTED_LIBS)


def under(path: str, *roots: str) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def site_packages(probe: Probe) -> str:
    paths = probe.python.get("site_packages") or []
    venv = [p for p in paths if p.startswith(probe.python.get("prefix", "/opt/venv"))]
    return (venv or paths or ["/opt/venv/lib/python3.11/site-packages"])[0]
