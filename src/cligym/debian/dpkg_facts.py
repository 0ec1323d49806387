"""Reading what dpkg's tools print about an installed system: ``dpkg-query -S`` (who owns a
path), ``dpkg-query -W`` with the conffiles, ``update-alternatives --get-selections``,
``dpkg-divert --list`` and ``ldconfig -p``. Pure: their output in, plain data out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cligym.models.debian_probe import Alternative, Diversion

#: The folders a merged-/usr system reaches by a symlink from / (a package may list either).
MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: dpkg-query -W's format: a package line, then its conffiles (lines starting with a space).
QUERY_FORMAT = "${binary:Package}\\t${Version}\\t${source:Package}\\t${Essential}\\t${Priority}\\n${Conffiles}\\n"


def aliases(path: str) -> list[str]:
    """``path`` and its merged-/usr twin (/usr/lib/x <-> /lib/x): dpkg knows a file by the
    name its package lists, which may be either."""
    parts = path.split("/")
    if len(parts) > 3 and parts[1] == "usr" and parts[2] in MERGED:
        return [path, "/" + "/".join(parts[2:])]
    if len(parts) > 2 and parts[1] in MERGED:
        return [path, "/usr" + path]
    return [path]


def queryable(path: str) -> bool:
    """dpkg-query -S takes a pattern: paths with glob characters (or a newline) are left out."""
    return not set(path) & set("*?[]\\\n")


def parse_owners(text: str) -> dict[str, list[str]]:
    """``dpkg-query -S`` lines (``pkg1, pkg2: /path``) -> path -> packages; diversion
    lines and errors are left out."""
    owners: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith(("diversion by ", "local diversion ")) or ": /" not in line:
            continue
        packages, _, path = line.partition(": /")
        owners.setdefault("/" + path, [])
        owners["/" + path] += [p.strip() for p in packages.split(",") if p.strip()]
    return owners


def owner_of(path: str, named: list[str], owners: dict[str, list[str]]) -> list[str]:
    """The packages owning ``path`` (resolved), by it, its merged-/usr twin or the names it
    was reached by (``named``: a symlink's own path is the package's name for it)."""
    for candidate in [*aliases(path), *(a for n in named for a in aliases(n))]:
        if owners.get(candidate):
            return sorted(set(owners[candidate]))
    return []


@dataclass
class Packages:
    """What ``dpkg-query -W -f QUERY_FORMAT`` says of some installed packages."""

    versions: dict[str, str] = field(default_factory=dict)
    conffiles: dict[str, list[str]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # package -> the source package it was built from
    core: list[str] = field(default_factory=list)  # Essential: yes, or Priority: required


def parse_packages(text: str) -> Packages:
    """``dpkg-query -W -f QUERY_FORMAT`` output, read."""
    found = Packages()
    package = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith(" "):
            fields = line.split()
            if package and fields and fields[0].startswith("/"):
                found.conffiles.setdefault(package, []).append(fields[0])
            continue
        package, version, source, essential, priority = (line.split("\t") + ["", "", "", ""])[:5]
        found.versions[package], found.sources[package] = version, source
        if essential == "yes" or priority == "required":
            found.core.append(package)
    return found


def parse_alternatives(text: str) -> list[Alternative]:
    """``update-alternatives --get-selections``: ``name  status  path``."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3:
            found.append(Alternative(name=fields[0], status=fields[1], path=fields[2]))
    return found


def parse_diversions(text: str) -> list[Diversion]:
    """``dpkg-divert --list``: ``[local ]diversion of PATH to TO[ by PACKAGE]``."""
    found = []
    for line in text.splitlines():
        match = re.match(r"^(?:local )?diversion of (\S+) to (\S+)(?: by (\S+))?$", line.strip())
        if match:
            found.append(Diversion(path=match.group(1), to=match.group(2), by=match.group(3) or ""))
    return found


def parse_ldconfig(text: str) -> list[tuple[str, str]]:
    """``ldconfig -p``'s entries: (``NAME (flags)``, the path it points at)."""
    found = []
    for line in text.splitlines():
        entry, arrow, path = line.strip().partition(" => ")
        if arrow and path.startswith("/"):
            found.append((entry, path))
    return found
