"""A small reader of Debian's control-file format (deb822): the archive's Sources and
Packages indexes, a .dsc, apt's .sources files, debian/tests/control. Also Debian's version
order and the package names of a relation field (Build-Depends and the like).

Enough for what cligym reads from the archive; not a general implementation (no field
validation, no relation semantics beyond the names).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import re
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from cligym.errors import CligymError

#: apt's own tool that reads any index compression apt keeps (lz4 and zstd among them).
APT_HELPER = "/usr/lib/apt/apt-helper"

PGP_BEGIN = "-----BEGIN PGP SIGNED MESSAGE-----"
PGP_SIGNATURE = "-----BEGIN PGP SIGNATURE-----"


def paragraphs(lines: Iterable[str]) -> Iterator[dict[str, str]]:
    """The paragraphs of deb822 text, each a dict of field -> value. A continued field's
    lines are joined with newlines (each without its leading space; a lone ``.`` is an
    empty line); ``#`` lines are comments."""
    fields: dict[str, str] = {}
    name = ""
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line.strip():
            if fields:
                yield fields
            fields, name = {}, ""
        elif line.startswith("#"):
            continue
        elif line[0] in " \t":
            if name:
                part = line[1:].rstrip()
                fields[name] += "\n" + ("" if part == "." else part)
        elif ":" in line:
            name, value = line.split(":", 1)
            name = name.strip()
            fields[name] = value.strip()
    if fields:
        yield fields


def parse(text: str) -> list[dict[str, str]]:
    """Every paragraph of ``text`` (an OpenPGP clear signature around it is dropped)."""
    return list(paragraphs(strip_signature(text).splitlines()))


def strip_signature(text: str) -> str:
    """The signed text of an OpenPGP clear-signed document (a .dsc, an InRelease), or the
    text itself when it is not signed."""
    if not text.lstrip().startswith(PGP_BEGIN):
        return text
    lines = text.lstrip().splitlines()
    start = lines.index("") + 1 if "" in lines else 1  # after the armor headers (Hash: ...)
    body = []
    for line in lines[start:]:
        if line.startswith(PGP_SIGNATURE):
            break
        body.append(line[2:] if line.startswith("- ") else line)  # dash-escaping
    return "\n".join(body) + "\n"


def field(fields: dict[str, str], name: str, default: str = "") -> str:
    """A field by name, whatever its case (deb822 field names are case-insensitive)."""
    if name in fields:
        return fields[name]
    lowered = name.lower()
    return next((v for k, v in fields.items() if k.lower() == lowered), default)


_RELATION_NAME = re.compile(r"^\s*([a-z0-9][a-z0-9.+\-]*)")


def relation_names(value: str) -> list[str]:
    """The package names of a relation field, alternatives included, in order and once
    each: ``debhelper-compat (= 13), cmake <!nocheck>, a | b [amd64]`` -> debhelper-compat,
    cmake, a, b. ``@``-style autopkgtest markers (``@``, ``@builddeps@``) are kept."""
    names: list[str] = []
    for clause in value.replace("\n", " ").split(","):
        for alternative in clause.split("|"):
            alternative = alternative.strip()
            if alternative.startswith("@"):
                name = alternative.split()[0]
            else:
                match = _RELATION_NAME.match(alternative)
                name = match.group(1).split(":")[0] if match else ""
            if name and name not in names:
                names.append(name)
    return names


def file_lines(value: str) -> list[tuple[str, int, str]]:
    """(checksum, size, name) of each line of a Files/Checksums-* field."""
    found = []
    for line in value.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            found.append((parts[0], int(parts[1]), parts[2]))
    return found


def words(value: str) -> list[str]:
    """A whitespace- or comma-separated list field (Binary, Testsuite, Restrictions)."""
    return [w for w in re.split(r"[\s,]+", value) if w]


# -- indexes as apt keeps them ---------------------------------------------------------------

_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".lzma": lzma.open, ".bz2": bz2.open}


def open_index(path: Path) -> IO[str]:
    """An index file as text, whatever compression apt kept it in (none, gz, xz, bz2,
    lzma in Python; lz4 and zstd through apt's own helper)."""
    opener = _OPENERS.get(path.suffix)
    if opener is not None:
        return io.TextIOWrapper(opener(path), encoding="utf-8", errors="replace")  # type: ignore[operator]
    if path.suffix not in (".lz4", ".zst"):
        return path.open(encoding="utf-8", errors="replace")
    if not Path(APT_HELPER).exists():
        raise CligymError(f"{path.name} is {path.suffix[1:]}-compressed and apt-helper is missing to read it")
    proc = subprocess.run([APT_HELPER, "cat-file", str(path)], capture_output=True, check=False)
    if proc.returncode != 0:
        raise CligymError(f"apt-helper could not read {path.name}: {proc.stderr.decode(errors='replace').strip()}")
    return io.StringIO(proc.stdout.decode("utf-8", errors="replace"))


def kept_index(filename: Path) -> Path | None:
    """The file apt keeps for an index named ``filename``: itself, or itself with the
    suffix of the compression apt kept it in (``Acquire::GzipIndexes``); None if absent."""
    if filename.is_file():
        return filename
    for suffix in (".lz4", ".zst", ".gz", ".xz", ".bz2", ".lzma"):
        candidate = filename.with_name(filename.name + suffix)
        if candidate.is_file():
            return candidate
    return None


# -- Debian's version order ------------------------------------------------------------------

def _order(char: str) -> int:
    if char == "~":
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _compare_part(a: str, b: str) -> int:
    """dpkg's verrevcmp: alternate non-digit runs (``~`` first, letters before the rest)
    and digit runs (numerically)."""
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            bc = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ac != bc:
                return ac - bc
            i, j = i + 1, j + 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i, j = i + 1, j + 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def split_version(version: str) -> tuple[int, str, str]:
    """(epoch, upstream version, Debian revision) of a Debian version."""
    epoch, _, rest = version.partition(":") if ":" in version else ("0", "", version)
    upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return int(epoch or 0), upstream, revision


def compare_versions(a: str, b: str) -> int:
    """Negative, zero or positive as Debian version ``a`` sorts before, with or after ``b``."""
    ea, ua, ra = split_version(a)
    eb, ub, rb = split_version(b)
    if ea != eb:
        return ea - eb
    return _compare_part(ua, ub) or _compare_part(ra, rb)
