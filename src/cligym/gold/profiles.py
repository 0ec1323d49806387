"""Per-project profiles: what a project's metadata does not say about testing it.

A profile is a small TOML file named after the project (``profiles/<name>.toml``) or
given with ``--profile FILE``. Every field is optional::

    version = "3.0.2"                    # used when SOURCE names no version
    test_command = "python -m pytest"    # run in the project dir; node ids get appended
    test_paths = ["tests"]               # what a full run collects
    requirements = ["pytest"]            # replaces the test deps read from metadata
    extras = ["yaml"]                    # the project's own extras to install too
    extra_requirements = ["pytest-x"]    # added to them
    ignore = ["tests/test_net.py", "tests/test_a.py::test_b"]   # files or node ids left out
"""

from __future__ import annotations

import json
import shlex
import tomllib
from importlib import resources
from pathlib import Path

from packaging.utils import canonicalize_name
from pydantic import BaseModel, ConfigDict, ValidationError

from cligym.errors import BadInput

DEFAULT_TEST_COMMAND = "python -m pytest"


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str | None = None
    test_command: str = DEFAULT_TEST_COMMAND
    test_paths: list[str] = []
    requirements: list[str] | None = None
    extras: list[str] = []
    extra_requirements: list[str] = []
    ignore: list[str] = []

    def full_test_command(self) -> str:
        """The test command with the ignores folded in (used for full and subset runs)."""
        parts = [self.test_command]
        for item in self.ignore:
            flag = "--deselect" if "::" in item else "--ignore"
            parts.append(f"{flag}={shlex.quote(item)}")
        return " ".join(parts)


def load_profile(name: str, path: Path | None = None, shipped: bool = True) -> Profile:
    """The profile from ``path``, else the shipped one for ``name`` (unless not
    ``shipped``), else the defaults."""
    if path is not None:
        if not path.is_file():
            raise BadInput(f"profile {path} does not exist")
        text = path.read_text(encoding="utf-8")
        where = str(path)
    else:
        file = resources.files("cligym.gold") / "profiles" / f"{canonicalize_name(name)}.toml"
        if not shipped or not file.is_file():
            return Profile()
        text = file.read_text(encoding="utf-8")
        where = f"shipped profile {canonicalize_name(name)}"
    try:
        return Profile.model_validate(tomllib.loads(text))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise BadInput(f"{where} is not a valid profile: {str(exc).splitlines()[0]}") from exc


def profile_text(name: str, version: str, requirements: list[str], declared_in: list[str],
                 inferred: dict[str, str]) -> str:
    """A profile pinning what a gold build used (``cligym gold --write-profile``): the
    version and the requirements, with where they came from as comments."""
    lines = [f"# {name}: written from its gold record by cligym gold --write-profile"]
    if declared_in:
        lines.append(f"# requirements declared in: {', '.join(declared_in)}")
    lines += [f"# added by the repair round: {req} ({why})" for req, why in inferred.items()]
    lines.append(f"version = {json.dumps(version)}")
    lines.append("requirements = [" + ", ".join(json.dumps(r) for r in requirements) + "]")
    text = "\n".join(lines) + "\n"
    Profile.model_validate(tomllib.loads(text))  # what is written loads back
    return text
