"""Records of Debian's archive as cligym sees it from the host: a source package's files,
a fetched and unpacked source, the binary packages downloaded for a dpkg status, and the
candidate source packages ``cligym debian candidates`` lists."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ArchiveFile(BaseModel):
    """One file of a source package (or one downloaded deb): its name, size and SHA-256."""

    name: str
    size: int
    sha256: str = ""
    url: str = ""  # where the archive serves it ('' when not known)


class FetchedSource(BaseModel):
    """A source package fetched and unpacked (``dpkg-source -x``, patches applied)."""

    source: str
    version: str
    tree: str  # the unpacked source tree
    dsc: str  # the .dsc file beside it
    fields: dict[str, str]  # the .dsc's fields (Binary, Version, Testsuite, Build-Depends, ...)
    files: list[ArchiveFile]


class DownloadedDeb(BaseModel):
    """A binary package downloaded for a dpkg status (what that status lacks)."""

    package: str
    version: str
    architecture: str
    path: str
    size: int
    sha256: str = ""


class Candidate(BaseModel):
    """A source package that declares autopkgtests, as the archive's Sources index lists it."""

    source: str
    version: str
    team: str  # autopkgtest-pkg-<team> of Testsuite, or "autopkgtest" for debian/tests/control
    language: str  # perl, go, nodejs, ruby, r, rust, python, elisp, dkms, c, ... or "other"
    testsuite: list[str]
    binaries: list[str] = Field(default_factory=list)
    build_depends: list[str] = Field(default_factory=list)  # package names only
    section: str = ""
    suite: str = ""  # the index it came from (its release's codename)
    files: list[ArchiveFile] = Field(default_factory=list)
    downloadable: bool | None = None  # None: not checked
    missing: list[str] = Field(default_factory=list)  # files the archive does not serve
    superficial: bool | None = None  # every test superficial; None: not checked
    tests: list[str] = Field(default_factory=list)  # test names read from debian/tests/control

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)
