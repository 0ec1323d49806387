"""What an operator breaks (``Target``), the typed data it carries, and the small shell
helpers that ΔD lines and solution lines are made of.

A target names a path and/or a name, the gold tests that touch it, and ``data``: the
details its operator found in the probe and read from the gold image, as the operator's
pydantic model (``Operator.Data``), so that a target stays JSON-serialisable as a whole.
An original file that a solution writes back travels inside the data (``Embedded``).
"""

from __future__ import annotations

import base64
import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

#: The interpreter of the base image, used by ΔD steps that need Python: it stays usable
#: even when an operator breaks the project's virtualenv.
SYSTEM_PYTHON = "/usr/bin/python3"
#: Largest original whose bytes a solution script carries.
MAX_EMBED = 2 * 1024 * 1024


# ---- shell helpers -------------------------------------------------------------------


q = shlex.quote


def b64(content: bytes) -> str:
    """Bytes as base64 text (e.g. kept in a target's data, so the target stays JSON-safe)."""
    return base64.b64encode(content).decode()


def run_python(code: str) -> str:
    """A RUN line executing ``code`` with the base image's Python (code travels as base64)."""
    return f"RUN echo {b64(code.encode())} | base64 -d | {SYSTEM_PYTHON}"


def write_file_line(path: str, content: bytes, mode: str | None = None) -> str:
    """A shell line (for a RUN line or a solution) writing ``content`` to ``path``."""
    line = f"mkdir -p {q(path.rsplit('/', 1)[0] or '/')} && echo {b64(content)} | base64 -d > {q(path)}"
    if mode:
        line += f" && chmod {mode} {q(path)}"
    return line


def pycache_glob(path: str) -> str:
    """A shell glob for the cached bytecode of a source file (to be left unquoted)."""
    folder, _, file = path.rpartition("/")
    return f"{q(folder + '/__pycache__/' + file[:-3])}.*.pyc"


# ---- originals carried in a target ---------------------------------------------------


class Embedded(BaseModel):
    """An original file of the gold image, carried so that a solution can write it back."""

    path: str
    content: str  # the original bytes, base64
    mode: str = "644"

    @classmethod
    def of(cls, path: str, raw: bytes, mode: str = "644") -> Embedded:
        return cls(path=path, content=b64(raw), mode=mode)

    def restore(self) -> list[str]:
        """Solution lines putting the original bytes (and mode) back."""
        return [write_file_line(self.path, base64.b64decode(self.content), self.mode)]


# ---- the target ----------------------------------------------------------------------


class TargetData(BaseModel):
    """The details of a target; operators subclass it (an operator without details uses it
    as it is). Unknown fields are refused, so a misspelt detail fails where it is made."""

    model_config = ConfigDict(extra="forbid")

    def replace(self, **fields: Any) -> TargetData:
        """A validated copy with ``fields`` replaced (nested models are kept as they are)."""
        return type(self)(**{**dict(self), **fields})


class RestoreData(TargetData):
    """Data of an operator that puts an original file back: the mode the probe listed, and
    the original itself (read from the gold image by ``prepare``)."""

    mode: str = "644"
    original: Embedded | None = None


class Target(BaseModel):
    """What one operator breaks: a path and/or name, typed details, and who touches it."""

    path: str = ""
    name: str = ""
    data: SerializeAsAny[TargetData] = Field(default_factory=TargetData)
    touching: list[str] = Field(default_factory=list)

    @property
    def key(self) -> str:
        return self.path or self.name

    def with_data(self, **fields: Any) -> Target:
        """A copy whose data has ``fields`` replaced."""
        return self.model_copy(update={"data": self.data.replace(**fields)})
