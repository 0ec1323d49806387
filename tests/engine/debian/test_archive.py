"""The private apt state against the real archive the host's apt sources name: update,
candidates, fetching and unpacking a source package, downloading debs for a dpkg status.
No Docker engine: the engine tier's container checks are switched off here. The archive
is one of the registries this tool needs: when it cannot be reached, the tests fail."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from cligym.debian.archive import (
    AptState,
    ArchiveUnreachable,
    NoAptSources,
    NoSourceIndexes,
    UnknownPackage,
)
from cligym.debian.candidates import check_downloads, read_candidates, select
from cligym.models.debian import Candidate

HOST_STATUS = Path("/var/lib/dpkg/status")


@pytest.fixture(autouse=True)
def _no_leftover_containers():
    """These tests run no container (overrides the engine tier's check, which asks Docker)."""
    yield


@pytest.fixture(scope="session", autouse=True)
def _remove_session_images():
    """These tests make no image (overrides the engine tier's clean-up, which asks Docker)."""
    yield


@pytest.fixture(scope="module")
def state(tmp_path_factory) -> AptState:
    apt = AptState(tmp_path_factory.mktemp("debian") / "apt")
    try:
        apt.update()
    except (ArchiveUnreachable, NoSourceIndexes, NoAptSources) as exc:
        pytest.fail(f"the archive the host's apt sources name is not reachable: {exc}")
    return apt


@pytest.fixture(scope="module")
def listed(state: AptState) -> list[Candidate]:
    return read_candidates(state.source_indexes())


@pytest.fixture(scope="module")
def small(listed: list[Candidate]) -> Candidate:
    """A small Node package the archive serves in full (found by asking, not named: only
    some of the files the indexes list are served here, so the smallest are asked in turn)."""
    nodes = sorted(select(listed, teams=["nodejs"]), key=lambda c: c.size)[:300]
    for entry in check_downloads(nodes, workers=8, timeout=10):
        if entry.downloadable:
            return entry
    pytest.fail("none of the 300 smallest Node source packages is served in full here")


def test_update_gives_sources_indexes_with_thousands_of_tested_packages(state: AptState,
                                                                         listed: list[Candidate]) -> None:
    assert state.source_indexes() and all(i.path.is_file() for i in state.source_indexes())
    teams = {c.team for c in listed}
    assert len(listed) > 1000 and {"perl", "nodejs", "autopkgtest"} <= teams
    assert all(f.url.startswith(("http://", "https://", "file:")) for c in listed[:50] for f in c.files)


def test_fetch_source_unpacks_the_tree_with_its_fields_and_files(state: AptState, small: Candidate,
                                                                   tmp_path: Path) -> None:
    fetched = state.fetch_source(small.source, small.version, dest=tmp_path)
    tree = Path(fetched.tree)
    assert (tree / "debian" / "control").is_file() and fetched.version == small.version
    assert fetched.fields["Testsuite"].startswith("autopkgtest") and fetched.fields.get("Binary")
    assert {f.name for f in fetched.files} == {f.name for f in small.files}
    for file in fetched.files:
        data = (tmp_path / file.name).read_bytes()
        assert len(data) == file.size and hashlib.sha256(data).hexdigest() == file.sha256


def test_unknown_sources_and_versions_are_clear_errors(state: AptState, tmp_path: Path) -> None:
    with pytest.raises(UnknownPackage, match="cligym-no-such-source"):
        state.fetch_source("cligym-no-such-source", dest=tmp_path)
    with pytest.raises(UnknownPackage, match="0.0.0-0cligym"):
        state.fetch_source("zlib", "0.0.0-0cligym", dest=tmp_path)


@pytest.mark.skipif(not HOST_STATUS.is_file(), reason="this host has no dpkg status to resolve against")
def test_download_debs_resolves_against_a_copy_of_the_given_status(state: AptState, small: Candidate,
                                                                     tmp_path: Path) -> None:
    before = hashlib.sha256(HOST_STATUS.read_bytes()).hexdigest()
    debs = state.download_debs(small.binaries[:1], HOST_STATUS, dest=tmp_path / "debs")
    assert hashlib.sha256(HOST_STATUS.read_bytes()).hexdigest() == before
    assert small.binaries[0] in {d.package for d in debs}
    for deb in debs:
        path = Path(deb.path)
        assert path.parent == tmp_path / "debs" and path.stat().st_size == deb.size and len(deb.sha256) == 64
    with pytest.raises(UnknownPackage, match="cligym-no-such-binary"):
        state.download_debs(["cligym-no-such-binary"], HOST_STATUS, dest=tmp_path / "debs")


def test_an_empty_status_downloads_the_whole_closure(state: AptState, small: Candidate, tmp_path: Path) -> None:
    empty = tmp_path / "status"
    empty.write_text("")
    debs = state.download_debs([small.binaries[0], "libc6"], empty, dest=tmp_path / "debs")
    packages = {d.package for d in debs}
    assert {small.binaries[0], "libc6", "libgcc-s1"} <= packages  # libc6's own dependencies come too
