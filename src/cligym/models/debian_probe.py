"""The Debian probe record: what each autopkgtest test of a Debian gold touches (files,
programs, shared objects, folders), and the image's dpkg facts about those paths (owning
packages, their conffiles, alternatives, diversions, the dynamic linker's cache). Operators
of the Debian world choose their targets from it. Plain data: made by
``cligym.debian.probe``, saved beside gold.json as ``probe-debian.json``."""

from __future__ import annotations

from pydantic import BaseModel, Field

#: Version of the record's layout: a probe saved with another is stale.
SCHEMA_VERSION = 2


class Program(BaseModel):
    """A program a test executed: the path it was executed as (absolute), the file that is
    (resolved) and the first argument it was given."""

    path: str
    real: str
    argv0: str = ""


class DebianTouch(BaseModel):
    """What one autopkgtest test's processes touched. Every path is absolute and was there
    in the gold image (files the test made itself are left out) unless said otherwise."""

    files: list[str] = Field(default_factory=list)  # opened (resolved), neither folder nor shared object
    programs: list[Program] = Field(default_factory=list)  # executed (execve that succeeded)
    objects: list[str] = Field(default_factory=list)  # shared objects opened (resolved): what was mapped
    folders: list[str] = Field(default_factory=list)  # opened as directories: listed (resolved)
    lookups: list[str] = Field(default_factory=list)  # stat/access that found it and nothing opened (resolved)
    #: ENOENT lookups kept: a shared object's name, or a path under the workdir, in a folder the
    #: image has (where a file put there would be picked up: a shadow, as named, unresolved)
    missing: list[str] = Field(default_factory=list)
    #: search-order misses: a path looked for and not found (in a folder the image may lack)
    #: -> the file the test then opened with the same name under another root (the same
    #: module path, or a file name with an extension): a file put at the first would be found
    #: first, a shadow (a language's search path, the loader's)
    shadows: dict[str, str] = Field(default_factory=dict)
    processes: int = 0  # the test's processes
    exit_code: int | None = None  # the runner's, under the tracer
    seconds: float = 0.0


class Alternative(BaseModel):
    name: str
    status: str  # auto or manual
    path: str


class Diversion(BaseModel):
    path: str
    to: str
    by: str = ""  # the package, or "" for a local diversion


class DebianProbe(BaseModel):
    schema_version: int = SCHEMA_VERSION
    gold_image_id: str
    workdir: str
    tests: dict[str, DebianTouch]  # autopkgtest test name -> what it touched
    #: every path of the tests' lists (but missing) -> the packages owning it (dpkg -S); [] for
    #: none (/usr/local, files made at install time)
    owners: dict[str, list[str]] = Field(default_factory=dict)
    #: the packages owning a path that is no folder -> installed version; their conffiles
    versions: dict[str, str] = Field(default_factory=dict)
    conffiles: dict[str, list[str]] = Field(default_factory=dict)
    of_source: list[str] = Field(default_factory=list)  # those of them the gold's source package built
    #: those of them the system needs to run a shell at all (Essential: yes, or Priority:
    #: required): a change to them breaks the shell every repair runs in
    core: list[str] = Field(default_factory=list)
    #: the in-image apt repository's packages (name -> version): what a repair can reinstall
    #: offline (the base image's own packages are not there)
    repository: dict[str, str] = Field(default_factory=dict)
    alternatives: list[Alternative] = Field(default_factory=list)  # update-alternatives --get-selections
    diversions: list[Diversion] = Field(default_factory=list)  # dpkg-divert --list
    ldconfig: dict[str, list[str]] = Field(default_factory=dict)  # mapped object -> its ldconfig -p entries
    env: dict[str, str] = Field(default_factory=dict)  # the first test's environment, as its program got it
    tracer: list[str] = Field(default_factory=list)  # packages installed in the probe's container only
    seconds: float = 0.0

    def paths(self) -> set[str]:
        """Every path a test touched (missing ones left out)."""
        found: set[str] = set()
        for touch in self.tests.values():
            found.update(touch.files, touch.objects, touch.folders, touch.lookups, (p.real for p in touch.programs))
        return found

    def touching(self, path: str) -> list[str]:
        """The tests that touched ``path`` (a resolved path of their lists)."""
        return [name for name, touch in self.tests.items()
                if path in touch.files or path in touch.objects or path in touch.folders or path in touch.lookups
                or any(p.real == path for p in touch.programs)]

    def owned_by(self, package: str) -> list[str]:
        """The touched paths ``package`` owns (an arch-qualified name matches too)."""
        return sorted(p for p, pkgs in self.owners.items()
                      if any(q == package or q.split(":")[0] == package for q in pkgs))
