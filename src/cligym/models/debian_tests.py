"""A Debian source package's autopkgtest tests as cligym reads them: the stanzas of
``debian/tests/control`` (or those autodep8 generates for a ``Testsuite:
autopkgtest-pkg-<team>`` package), each test's dependencies, what its restrictions mean for
cligym's runner (which never builds and never installs anything), and the inner runner
that gives its per-test results.

Parsed by ``cligym.debian.control``; the runner (``harness/scripts/debtest.sh``) reads the
runnable tests back from the tests list that module writes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

#: The inner runners whose per-test output a converter (``harness/scripts/junit/<runner>.awk``)
#: turns into JUnit testcases; ``none``: one result for the whole autopkgtest test.
InnerRunner = Literal["tap", "gotest", "rspec", "libtest", "testthat", "ert", "none"]


class Relation(BaseModel):
    """One alternative of a dependency: ``name:arch (op version) [arches] <profiles>``."""

    name: str
    arch_qualifier: str = ""
    op: str = ""
    version: str = ""
    #: ``[amd64 !i386]`` as written, without brackets; empty: every architecture
    arches: list[str] = Field(default_factory=list)
    #: ``<!nocheck> <cross>`` groups as written, each group's terms split
    profiles: list[list[str]] = Field(default_factory=list)

    def spec(self) -> str:
        """The relation as apt takes it on a command line (``name (>= 1.0)``, no
        architecture list or profiles)."""
        name = f"{self.name}:{self.arch_qualifier}" if self.arch_qualifier else self.name
        return f"{name} ({self.op} {self.version})" if self.op else name


class Dependency(BaseModel):
    """One comma-separated item of a Depends field: its alternatives (``a | b``), in order."""

    alternatives: list[Relation]
    #: where it came from: ``depends`` (written in the stanza), ``@``, ``@builddeps@``,
    #: ``@recommends@``
    origin: str = "depends"


class TestStanza(BaseModel):
    """One stanza of ``debian/tests/control`` as written (fields are case-insensitive;
    continuation lines joined, comments dropped, lists split on commas and spaces)."""

    __test__ = False

    tests: list[str] = Field(default_factory=list)
    test_command: str = ""
    depends: str = "@"  # autopkgtest's default when the field is absent
    restrictions: list[str] = Field(default_factory=list)
    features: list[str] = Field(default_factory=list)
    classes: list[str] = Field(default_factory=list)
    tests_directory: str = "debian/tests"
    architecture: list[str] = Field(default_factory=list)
    #: fields autopkgtest does not know: it skips such a stanza's tests
    unknown_fields: list[str] = Field(default_factory=list)
    #: ``control`` or ``autodep8:<team>``
    origin: str = "control"


class AutopkgTest(BaseModel):
    """One autopkgtest test: a script under its tests directory or a shell command."""

    __test__ = False

    name: str
    #: the script's path relative to the source tree, or empty for a Test-Command test
    path: str = ""
    command: str = ""
    restrictions: list[str] = Field(default_factory=list)
    features: list[str] = Field(default_factory=list)
    classes: list[str] = Field(default_factory=list)
    architecture: list[str] = Field(default_factory=list)
    depends: list[Dependency] = Field(default_factory=list)
    origin: str = "control"
    #: whether cligym's runner can run it at all, and if not why (``why_not``)
    runnable: bool = True
    why_not: str = ""
    #: only ``superficial``: it shows the package installs, not that it works
    superficial: bool = False
    #: ``flaky``: its result is not to be trusted for a verdict
    flaky: bool = False
    runner: InnerRunner = "none"
    #: environment settings that make the inner runner print one line per test
    #: (``NAME=VALUE``), set by the runner without touching the package's files
    verbose_env: list[str] = Field(default_factory=list)

    def install_list(self, arch: str = "amd64") -> list[str]:
        """The packages to install for this test: of each dependency the first alternative
        that applies to ``arch``, as ``name (op version)`` (duplicates once)."""
        seen: list[str] = []
        for dep in self.depends:
            chosen = first_applicable(dep, arch)
            if chosen is not None and chosen.spec() not in seen:
                seen.append(chosen.spec())
        return seen


class DebianTests(BaseModel):
    """Every test of one source package."""

    source: str
    tests: list[AutopkgTest] = Field(default_factory=list)
    #: the team of ``Testsuite: autopkgtest-pkg-<team>``, if any
    team: str = ""
    #: the binary packages the source builds (what ``@`` stands for)
    binaries: list[str] = Field(default_factory=list)

    def runnable(self) -> list[AutopkgTest]:
        return [t for t in self.tests if t.runnable]


def arch_applies(arches: list[str], arch: str) -> bool:
    """Whether an architecture list (``amd64 !i386``, ``linux-any``, ``any-amd64``) lets
    ``arch`` in; an empty list lets every architecture in."""
    if not arches:
        return True
    negated = [a[1:] for a in arches if a.startswith("!")]
    if negated:
        return not any(_arch_matches(a, arch) for a in negated)
    return any(_arch_matches(a, arch) for a in arches)


def _arch_matches(wildcard: str, arch: str) -> bool:
    if wildcard in ("any", arch, "all"):
        return True
    if wildcard.startswith("linux-"):
        return wildcard == "linux-any"
    if wildcard.startswith("any-"):
        return wildcard[4:] == arch
    return False


def first_applicable(dep: Dependency, arch: str) -> Relation | None:
    """The first alternative whose architecture list and build profiles apply (no profile
    is active: ``<!nocheck>`` applies, ``<nocheck>`` does not)."""
    for alt in dep.alternatives:
        if not arch_applies(alt.arches, arch):
            continue
        if alt.profiles and not any(all(t.startswith("!") for t in group) for group in alt.profiles):
            continue
        return alt
    return None
