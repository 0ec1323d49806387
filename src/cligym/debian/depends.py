"""Test dependencies as autopkgtest reads them: a Depends field's relations (alternatives,
version constraints, architecture lists, build profiles) and its markers: ``@`` (every
binary package the source builds), ``@builddeps@`` (the source's build dependencies, plus
build-essential) and ``@recommends@`` (what the source's binaries recommend).

Also the reader of control files with autopkgtest's own comment rule (a ``#`` anywhere
starts a comment: its ``parse_rfc822`` strips it before deb822 parsing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from cligym.debian.deb822 import paragraphs
from cligym.models.debian_tests import Dependency, Relation, arch_applies

_RELATION = re.compile(
    r"^(?P<name>[a-z0-9][a-z0-9+.\-]*)(?::(?P<archq>[a-z0-9_\-]+))?\s*"
    r"(?:\(\s*(?P<op><<|<=|>=|=|>>|<|>)\s*(?P<version>[^)\s]+)\s*\))?\s*"
    r"(?:\[(?P<arches>[^\]]*)\])?\s*(?P<profiles>(?:<[^>]*>\s*)*)$"
)
#: a substitution variable (``${misc:Depends}``): not a package at test time
_SUBSTVAR = re.compile(r"\$\{[^}]*\}")


class RelationError(ValueError):
    """A relation autopkgtest would refuse (the test is then not run)."""


def control_paragraphs(lines: Iterable[str]) -> Iterator[dict[str, str]]:
    """The paragraphs of a control file, as autopkgtest reads ``debian/tests/control``:
    a ``#`` ends the line's text (a line left blank by it is dropped, so it does not end a
    paragraph), continuation lines are joined to their field with a space, field names
    compare case-insensitively (keys here are ``str.title()``-cased)."""
    kept = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if "#" in line:
            line = line.split("#", 1)[0]
            if not line.strip():
                continue
        kept.append(line)
    for fields in paragraphs(kept):
        yield {"-".join(p.capitalize() for p in key.split("-")): " ".join(value.split("\n")).replace("  ", " ")
               for key, value in fields.items()}


def parse_relation(text: str) -> Relation:
    match = _RELATION.match(text.strip())
    if not match:
        raise RelationError(f"not a dependency: {text.strip()!r}")
    profiles = [g.split() for g in re.findall(r"<([^>]*)>", match.group("profiles") or "")]
    return Relation(name=match.group("name"), arch_qualifier=match.group("archq") or "",
                    op=_canonical_op(match.group("op") or ""), version=match.group("version") or "",
                    arches=(match.group("arches") or "").split(), profiles=profiles)


def _canonical_op(op: str) -> str:
    return {"<": "<=", ">": ">="}.get(op, op)  # the obsolete forms mean <= and >=


def parse_relations(field: str, origin: str = "depends") -> list[Dependency]:
    """The comma-separated items of a relation field, each with its alternatives;
    substitution variables and empty items are skipped."""
    deps = []
    for item in _SUBSTVAR.sub("", field.replace("\n", " ")).split(","):
        if not item.strip():
            continue
        alternatives = [parse_relation(a) for a in item.split("|") if a.strip()]
        if alternatives:
            deps.append(Dependency(alternatives=alternatives, origin=origin))
    return deps


class SourceControl:
    """What ``debian/control`` tells about a test's dependencies."""

    def __init__(self, text: str) -> None:
        stanzas = list(control_paragraphs(text.splitlines()))
        self.source: dict[str, str] = stanzas[0] if stanzas and "Source" in stanzas[0] else {}
        self.packages = [s for s in stanzas if "Package" in s]

    @property
    def name(self) -> str:
        return self.source.get("Source", "")

    @property
    def testsuites(self) -> list[str]:
        value = self.source.get("Testsuite") or self.source.get("Xs-Testsuite", "")
        return [w for w in re.split(r"[\s,]+", value) if w]

    def binaries(self, arch: str = "amd64") -> list[str]:
        """The binary packages ``@`` stands for: real debs (no udebs) built for ``arch``."""
        found = []
        for stanza in self.packages:
            kind = stanza.get("Package-Type") or stanza.get("Xc-Package-Type") or "deb"
            arches = stanza.get("Architecture", "any").split()
            if kind != "deb" or not any(arch_applies([a], arch) for a in arches):
                continue
            found.append(stanza["Package"])
        return found

    def build_depends(self) -> list[Dependency]:
        """Build-Depends, -Indep and -Arch, then build-essential (``@builddeps@``)."""
        field = ", ".join(self.source.get(f, "") for f in ("Build-Depends", "Build-Depends-Indep",
                                                           "Build-Depends-Arch"))
        return [*parse_relations(field, "@builddeps@"),
                Dependency(alternatives=[Relation(name="build-essential")], origin="@builddeps@")]

    def recommends(self, arch: str = "amd64") -> list[Dependency]:
        """The Recommends of every binary package ``@`` stands for (``@recommends@``)."""
        mine = set(self.binaries(arch))
        field = ", ".join(s.get("Recommends", "") for s in self.packages if s["Package"] in mine)
        return parse_relations(field, "@recommends@")


def expand_depends(field: str, control: SourceControl, arch: str = "amd64") -> list[Dependency]:
    """A test's Depends with its markers expanded: ``@`` to one dependency per binary
    package, ``@builddeps@`` and ``@recommends@`` to theirs; others as written."""
    deps: list[Dependency] = []
    for item in field.replace("\n", " ").split(","):
        item = item.strip()
        if item == "@":
            deps += [Dependency(alternatives=[Relation(name=b)], origin="@") for b in control.binaries(arch)]
        elif item == "@builddeps@":
            deps += control.build_depends()
        elif item == "@recommends@":
            deps += control.recommends(arch)
        elif item:
            deps += parse_relations(item)
    return deps
