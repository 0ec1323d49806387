"""Saving and loading the pydantic records that pass between stages, atomically."""

from __future__ import annotations

import json
import os
import tempfile
import tomllib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from cligym import __version__
from cligym.errors import BadInput

M = TypeVar("M", bound=BaseModel)


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` (UTF-8) or bytes to ``path`` so a reader sees the old file or the new
    one, never half: into a temporary name in the same folder, synced, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; a record is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_toml(path: Path, what: str) -> dict:
    """The table in TOML file ``path``; a missing, unreadable or invalid file is one
    BadInput line naming ``what`` the file was meant to be."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInput(f"{what} {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{what} {path}: cannot read it ({' '.join(str(exc).split())})") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{what} {path}: not valid TOML ({' '.join(str(exc).split())})") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save(record: BaseModel, path: Path) -> Path:
    write_atomic(path, record.model_dump_json(indent=2, by_alias=True) + "\n")
    return path


def load(model: type[M], path: Path, what: str | None = None) -> M:
    """Load a record, turning a missing or invalid file into one clear BadInput line."""
    what = what or model.__name__
    if not path.is_file():
        raise BadInput(f"{path} does not exist (expected a {what} record)")
    text = path.read_text(encoding="utf-8")
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        raise BadInput(f"{path} is not a valid {what} record: {_first_error(exc)}{_written_by(text)}") from exc
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadInput(f"{path} is not a valid {what} record: {first}") from exc


def _first_error(exc: ValidationError) -> str:
    """The first problem, with the field it is about (pydantic's own first line names
    only the model and a count)."""
    errors = exc.errors()
    if not errors:
        return str(exc).splitlines()[0]
    error = errors[0]
    where = ".".join(str(part) for part in error.get("loc", ())) or "the record"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {error.get('msg', 'invalid')}{more}"


def _written_by(text: str) -> str:
    """'; written by cligym X' when the record names another version than this one."""
    try:
        data = json.loads(text)
    except ValueError:
        return ""
    version = data.get("cligym_version") if isinstance(data, dict) else None
    if version and version != __version__:
        return f"; it was written by cligym {version}, this is {__version__}"
    return ""
