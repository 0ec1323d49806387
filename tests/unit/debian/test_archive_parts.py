"""The private apt state's parts that need no network: its configuration and sources,
apt's failures as cligym errors, apt's --print-uris lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from cligym.debian import archive
from cligym.debian.archive import (
    AptFailed,
    AptState,
    ArchiveUnreachable,
    FileNotServed,
    NoAptSources,
    NoSourceIndexes,
    UnknownPackage,
    Unresolvable,
    classify,
    print_uris,
)
from cligym.errors import CligymError

MIRROR = "http://mirror.example/debian"


@pytest.fixture
def state(tmp_path: Path, monkeypatch) -> AptState:
    host = tmp_path / "host.list"
    host.write_text(f"deb [signed-by=/usr/share/keyrings/example.gpg] {MIRROR} bookworm main\n")
    monkeypatch.setattr(AptState, "host_settings", staticmethod(lambda: ['Acquire::http::Proxy "http://p:3128";']))
    return AptState(tmp_path / "apt", host_sources=[host])


def test_prepare_writes_a_private_configuration(state: AptState) -> None:
    state.prepare()
    sources = (state.etc / "sources.list.d" / "host.sources").read_text()
    assert "Types: deb deb-src" in sources and f"URIs: {MIRROR}" in sources
    assert "Signed-By: /usr/share/keyrings/example.gpg" in sources
    config = state.config.read_text()
    for folder in (state.state, state.cache, state.etc):
        assert f'"{folder}/"' in config
    assert f'Dir::State::status "{state.status}";' in config
    assert 'Acquire::http::Proxy "http://p:3128";' in config  # the host's network settings kept
    assert state.status.read_text() == "" and (state.lists / "partial").is_dir()


def test_no_host_source_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NoAptSources, match="names no apt source"):
        AptState(tmp_path / "apt", host_sources=[]).prepare()


def test_no_index_before_an_update(tmp_path: Path) -> None:
    assert AptState(tmp_path / "apt", host_sources=[]).source_indexes() == []


@pytest.mark.parametrize(("stderr", "kind", "says"), [
    ("E: Unable to find a source package for nosuch", UnknownPackage, "Unable to find a source package"),
    ("E: Can not find version '9.9' of package 'node-ini'\nE: Unable to find a source package for node-ini",
     UnknownPackage, "Can not find version"),
    ("E: Unable to locate package nosuch-bin", UnknownPackage, "Unable to locate"),
    ("E: You must put some 'deb-src' URIs in your sources.list", NoSourceIndexes, "deb-src"),
    (f"E: Failed to fetch {MIRROR}/pool/main/x/x/x_1.orig.tar.gz  404  Not Found [IP: 192.0.2.1 80]",
     FileNotServed, "does not serve x_1.orig.tar.gz (404  Not Found)"),
    (f"W: Failed to fetch {MIRROR}/dists/bookworm/InRelease  Could not resolve 'mirror.example'\n"
     "E: Some index files failed to download.", ArchiveUnreachable, "unreachable"),
    ("E: Unable to correct problems, you have held broken packages.", Unresolvable, "cannot resolve"),
    ("E: Failed to fetch x  Hash Sum mismatch", FileNotServed, "does not match"),
    ("E: something new", AptFailed, "something new"),
])
def test_apt_failures_become_one_line_errors(stderr: str, kind: type, says: str) -> None:
    error = classify(stderr, "subject")
    assert type(error) is kind and isinstance(error, CligymError)
    assert says in str(error) and "\n" not in str(error) and str(error).startswith("subject: ")


def test_an_unknown_package_is_bad_input() -> None:
    assert UnknownPackage("x").exit_code == 2


def test_print_uris_lines() -> None:
    out = (f"'{MIRROR}/pool/main/j/json-c/json-c_0.16-2.dsc' json-c_0.16-2.dsc 2081 SHA256:e91baf06\n"
           f"'{MIRROR}/pool/main/n/node-ini/node-ini_3.0.1-2_all.deb' node-ini_3.0.1-2_all.deb 6928 MD5Sum:7908e2\n"
           "Reading package lists...\n")
    dsc, deb = print_uris(out)
    assert (dsc.name, dsc.size, dsc.sha256) == ("json-c_0.16-2.dsc", 2081, "e91baf06")
    assert dsc.url.endswith("/json-c_0.16-2.dsc")
    assert (deb.name, deb.size, deb.sha256) == ("node-ini_3.0.1-2_all.deb", 6928, "")


def test_a_downloaded_deb_is_named_from_its_file(tmp_path: Path) -> None:
    path = tmp_path / "libfoo1_1%3a2.0-1_amd64.deb"
    path.write_bytes(b"!<arch>\n")
    (listed,) = print_uris(f"'{MIRROR}/pool/x.deb' {path.name} 8 MD5Sum:00")
    deb = AptState._downloaded(path, listed, "libfoo1")
    assert (deb.package, deb.version, deb.architecture, deb.size) == ("libfoo1", "1:2.0-1", "amd64", 8)
    assert len(deb.sha256) == 64
    with pytest.raises(FileNotServed):
        AptState._downloaded(tmp_path / "absent_1_all.deb", listed, "absent")


def test_download_debs_refuses_a_missing_status_before_any_network(state: AptState, tmp_path: Path) -> None:
    with pytest.raises(CligymError, match="no dpkg status"):
        state.download_debs(["x"], tmp_path / "no-status", dest=tmp_path / "debs")
    assert state.download_debs([], tmp_path / "no-status", dest=tmp_path / "debs") == []
    assert archive.UPDATE_TIMEOUT > 0
