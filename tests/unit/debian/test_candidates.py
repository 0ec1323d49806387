"""Candidates from Sources indexes: teams, languages, the newest version once, and the
download check's verdicts (the network replaced by a table of answers)."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from cligym.debian import candidates as cands
from cligym.debian.archive import SourceIndex
from cligym.debian.candidates import candidate, check_downloads, guess_language, read_candidates, select, team_of

MIRROR = "http://mirror.example/debian/"


def stanza(name: str, version: str, testsuite: str = "", build_depends: str = "debhelper-compat (= 13)",
           section: str = "misc", architecture: str = "any") -> str:
    lines = [f"Package: {name}", f"Binary: {name}-bin, lib{name}-dev", f"Version: {version}",
             f"Build-Depends: {build_depends}", f"Architecture: {architecture}", "Files:",
             f" 0123 1983 {name}_{version}.dsc", f" 4567 337024 {name}_{version.split('-')[0]}.orig.tar.gz",
             "Checksums-Sha256:", f" aa11 1983 {name}_{version}.dsc",
             f" bb22 337024 {name}_{version.split('-')[0]}.orig.tar.gz",
             f"Directory: pool/main/{name[0]}/{name}", f"Section: {section}"]
    if testsuite:
        lines.append(f"Testsuite: {testsuite}")
    return "\n".join(lines) + "\n\n"


def index(tmp_path: Path, name: str, text: str, codename: str = "bookworm") -> SourceIndex:
    path = tmp_path / f"{name}_Sources.xz"
    path.write_bytes(lzma.compress(text.encode()))
    return SourceIndex(path, MIRROR, codename)


@pytest.mark.parametrize(("testsuite", "team"), [
    (["autopkgtest-pkg-perl"], "perl"), (["autopkgtest"], "autopkgtest"),
    (["autopkgtest", "autopkgtest-pkg-python"], "python"), (["autopkgtest-pkg-r"], "r"),
])
def test_team_of(testsuite: list[str], team: str) -> None:
    assert team_of(testsuite) == team


@pytest.mark.parametrize(("build_depends", "section", "architecture", "language"), [
    (["debhelper-compat", "cargo", "librust-serde-dev"], "rust", "any", "rust"),
    (["debhelper-compat", "librust-libc-dev"], "misc", "any", "rust"),
    (["debhelper-compat", "dh-golang", "golang-any"], "golang", "any", "go"),
    (["debhelper-compat", "dh-sequence-nodejs"], "javascript", "all", "nodejs"),
    (["debhelper-compat", "gem2deb"], "ruby", "all", "ruby"),
    (["debhelper-compat", "dh-r", "r-base-dev"], "gnu-r", "any", "r"),
    (["debhelper-compat", "dh-python", "python3-all"], "python", "all", "python"),
    (["debhelper-compat", "libmodule-build-perl"], "perl", "all", "perl"),
    (["debhelper-compat", "cmake", "doxygen"], "libs", "any", "c"),
    (["debhelper-compat", "g++", "cmake"], "libs", "any", "c++"),
    (["debhelper-compat"], "perl", "all", "perl"),
    (["debhelper-compat"], "libs", "any", "c"),
    (["debhelper-compat"], "misc", "all", "other"),
])
def test_the_language_of_a_package_with_its_own_tests(build_depends, section, architecture, language) -> None:
    assert guess_language(build_depends, section, architecture) == language


def test_a_sources_paragraph_becomes_a_candidate(tmp_path: Path) -> None:
    from cligym.debian.deb822 import parse

    (fields,) = parse(stanza("json-c", "0.16-2", "autopkgtest", "debhelper-compat (= 13), cmake, doxygen",
                             "libs"))
    found = candidate(fields, SourceIndex(tmp_path / "x", MIRROR, "bookworm"))
    assert found is not None
    assert (found.source, found.version, found.team, found.language) == ("json-c", "0.16-2", "autopkgtest", "c")
    assert found.binaries == ["json-c-bin", "libjson-c-dev"] and found.build_depends[1] == "cmake"
    assert [f.url for f in found.files] == [MIRROR + "pool/main/j/json-c/json-c_0.16-2.dsc",
                                            MIRROR + "pool/main/j/json-c/json-c_0.16.orig.tar.gz"]
    assert found.files[0].sha256 == "aa11" and found.size == 1983 + 337024
    (untested,) = parse(stanza("zlib", "1.2.13-1"))
    assert candidate(untested, SourceIndex(tmp_path / "x", MIRROR, "bookworm")) is None


def test_read_candidates_keeps_the_newest_version_once(tmp_path: Path) -> None:
    main = index(tmp_path, "main", stanza("node-ini", "3.0.1-2", "autopkgtest-pkg-nodejs")
                 + stanza("libyaml-libyaml-perl", "0.86+ds-1", "autopkgtest-pkg-perl") + stanza("zlib", "1.2.13-1"))
    security = index(tmp_path, "security", stanza("libyaml-libyaml-perl", "0.86+ds-1+deb12u1",
                                                  "autopkgtest-pkg-perl"), "bookworm-security")
    found = read_candidates([main, security])
    assert [(c.source, c.version, c.suite) for c in found] == [
        ("libyaml-libyaml-perl", "0.86+ds-1+deb12u1", "bookworm-security"), ("node-ini", "3.0.1-2", "bookworm")]
    assert [c.source for c in select(found, teams=["perl"])] == ["libyaml-libyaml-perl"]
    assert [c.source for c in select(found, languages=["nodejs", "go"])] == ["node-ini"]
    assert select(found, teams=["perl"], languages=["nodejs"]) == []
    assert cands.counts(found)["team"] == {"perl": 1, "nodejs": 1}


def test_check_downloads_verdicts(tmp_path: Path, monkeypatch) -> None:
    text = "".join(stanza(name, "1-1", "autopkgtest") for name in "abc")
    listed = read_candidates([index(tmp_path, "main", text)])
    answers = {"a": (True, "200"), "b": (False, "404"), "c": (None, "timed out")}

    def fake(url: str, timeout: float = 10.0):
        name = url.rsplit("/", 1)[-1]
        return answers[name[0]] if name.endswith(".orig.tar.gz") else (True, "200")

    monkeypatch.setattr(cands, "served", fake)
    seen = []
    checked = list(check_downloads(listed, workers=2, on_done=lambda c: seen.append(c.source)))
    assert [(c.source, c.downloadable) for c in checked] == [("a", True), ("b", False), ("c", None)]
    assert checked[1].missing == ["b_1.orig.tar.gz (404)"] and seen == ["a", "b", "c"]


def test_served_reads_file_uris_and_refuses_other_schemes(tmp_path: Path) -> None:
    present = tmp_path / "x.dsc"
    present.write_text("")
    assert cands.served(f"file:{present}") == (True, "file")
    assert cands.served(f"file://{tmp_path}/absent.dsc")[0] is False
    assert cands.served("cdrom:[disc]/pool/x.dsc")[0] is None
