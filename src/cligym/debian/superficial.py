"""Are a candidate's tests only ``superficial``? Read from its ``debian/tests/control`` in
the Debian tarball (``.debian.tar.*``; a ``.diff.gz`` for format 1.0; the one tarball of a
small native package), fetched only when asked. A cheap estimate for choosing candidates,
not the tests a gold environment runs (those come from the unpacked source)."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import urllib.request

from cligym.debian.control import named_tests, parse_stanzas
from cligym.models.debian import ArchiveFile, Candidate

#: The largest file fetched to read debian/tests/control from.
MAX_BYTES = 20_000_000
CONTROL = "debian/tests/control"
NODE_SUITE = "debian/tests/pkg-js/test"  # what pkg-js-autopkgtest runs beyond require()
#: Teams whose generated tests (autodep8) only import the package.
IMPORT_ONLY_TEAMS = {"python", "pybuild"}


class NotChecked(Exception):
    """The control file could not be read (no Debian tarball, too big, not served)."""


def debian_file(files: list[ArchiveFile]) -> ArchiveFile | None:
    """The file that holds a source package's debian/ folder."""
    for file in files:
        if ".debian.tar." in file.name or file.name.endswith(".diff.gz"):
            return file
    tars = [f for f in files if ".tar." in f.name and ".orig" not in f.name]
    return tars[0] if len(tars) == 1 else None


def fetch(file: ArchiveFile, timeout: float = 30.0) -> bytes:
    if file.size > MAX_BYTES:
        raise NotChecked(f"{file.name} is {file.size / 1e6:.0f} MB")
    try:
        with urllib.request.urlopen(file.url, timeout=timeout) as response:  # noqa: S310 (the host's sources)
            data = response.read(MAX_BYTES + 1)
    except OSError as exc:
        raise NotChecked(f"{file.name}: {getattr(exc, 'reason', exc)}") from exc
    if file.sha256 and hashlib.sha256(data).hexdigest() != file.sha256:
        raise NotChecked(f"{file.name} does not match its index's checksum")
    return data


def members(name: str, data: bytes, wanted: set[str]) -> dict[str, str]:
    """The text of the ``wanted`` paths (relative to the package's top folder) found in a
    tarball or a 1.0 ``.diff.gz``."""
    if name.endswith(".diff.gz"):
        return diff_members(gzip.decompress(data).decode("utf-8", errors="replace"), wanted)
    found = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        for member in tar:
            path = member.name.lstrip("./")
            relative = path if path.startswith("debian/") else path.partition("/")[2]
            if member.isfile() and relative in wanted:
                handle = tar.extractfile(member)
                if handle is not None:
                    found[relative] = handle.read().decode("utf-8", errors="replace")
    return found


def diff_members(diff: str, wanted: set[str]) -> dict[str, str]:
    """The added lines of the files a unified diff creates, for the ``wanted`` paths."""
    found: dict[str, list[str]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            relative = line[4:].split("\t")[0].partition("/")[2]
            current = relative if relative in wanted else None
            if current:
                found[current] = []
        elif current and line.startswith("+"):
            found[current].append(line[1:])
        elif line.startswith("--- ") or line.startswith("diff "):
            current = None
    return {k: "\n".join(v) + "\n" for k, v in found.items()}


def control_tests(control: str) -> list[tuple[str, bool]]:
    """(name, superficial) of each test of a debian/tests/control, read as autopkgtest reads it."""
    return [(name, "superficial" in stanza.restrictions) for name, stanza in named_tests(parse_stanzas(control))]


def judge(entry: Candidate, texts: dict[str, str]) -> Candidate:
    """The candidate with ``tests`` and ``superficial`` filled in from the files read."""
    tests = control_tests(texts.get(CONTROL, ""))
    if entry.team == "autopkgtest" and not tests:
        return entry.model_copy(update={"missing": [*entry.missing, f"no test in {CONTROL}"]})
    generated_real = entry.team != "autopkgtest" and entry.team not in IMPORT_ONLY_TEAMS
    if entry.team == "nodejs":
        generated_real = NODE_SUITE in texts
    names = [name for name, _ in tests]
    if entry.team != "autopkgtest":
        names.append(f"autodep8-{entry.team}")
    shallow = not generated_real and all(s for _, s in tests)
    return entry.model_copy(update={"tests": names, "superficial": shallow})


def check_superficial(entry: Candidate, timeout: float = 30.0) -> Candidate:
    """The candidate with its tests' names and whether they are all superficial (None,
    and its reason in ``missing``, when its control file could not be read)."""
    file = debian_file(entry.files)
    if file is None:
        return entry.model_copy(update={"missing": [*entry.missing, "no Debian tarball to read tests from"]})
    try:
        texts = members(file.name, fetch(file, timeout), {CONTROL, NODE_SUITE})
    except (NotChecked, tarfile.TarError, OSError, EOFError) as exc:
        return entry.model_copy(update={"missing": [*entry.missing, f"tests not read: {exc}"]})
    return judge(entry, texts)
