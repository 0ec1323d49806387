"""Superficial-only tests, read from debian/tests/control in a Debian tarball or a 1.0 diff."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from cligym.debian import superficial
from cligym.debian.superficial import debian_file, diff_members, judge, members, control_tests
from cligym.models.debian import ArchiveFile, Candidate

CONTROL = """\
Tests: unit-test
Depends: @, build-essential, cmake
Restrictions: allow-stderr

Test-Command: pkg-config --cflags json-c
Depends: @
Restrictions: superficial
"""

SHALLOW = """\
Tests: import
Depends: @
Restrictions: superficial, allow-stderr
"""


def entry(team: str = "autopkgtest", files: list[str] | None = None) -> Candidate:
    names = files or ["x_1-1.dsc", "x_1.orig.tar.gz", "x_1-1.debian.tar.xz"]
    return Candidate(source="x", version="1-1", team=team, language="c", testsuite=[team],
                     files=[ArchiveFile(name=n, size=10, url=f"http://mirror.example/{n}") for n in names])


def tarball(files: dict[str, str], prefix: str = "", mode: str = "w:xz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:  # type: ignore[call-overload]
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_tests_of_a_control_file() -> None:
    assert control_tests(CONTROL) == [("unit-test", False), ("command1", True)]
    assert control_tests(SHALLOW) == [("import", True)]


@pytest.mark.parametrize(("team", "texts", "shallow", "names"), [
    ("autopkgtest", {superficial.CONTROL: CONTROL}, False, ["unit-test", "command1"]),
    ("autopkgtest", {superficial.CONTROL: SHALLOW}, True, ["import"]),
    ("perl", {}, False, ["autodep8-perl"]),
    ("python", {}, True, ["autodep8-python"]),
    ("python", {superficial.CONTROL: CONTROL}, False, ["unit-test", "command1", "autodep8-python"]),
    ("nodejs", {}, True, ["autodep8-nodejs"]),
    ("nodejs", {superficial.NODE_SUITE: "tap test/*.js\n"}, False, ["autodep8-nodejs"]),
])
def test_judge(team: str, texts: dict[str, str], shallow: bool, names: list[str]) -> None:
    judged = judge(entry(team), texts)
    assert judged.superficial is shallow and judged.tests == names


def test_a_package_with_its_own_tests_but_no_control_is_not_judged() -> None:
    judged = judge(entry(), {})
    assert judged.superficial is None and judged.missing == ["no test in debian/tests/control"]


def test_members_of_a_debian_tarball_and_of_a_native_one() -> None:
    data = tarball({"debian/tests/control": CONTROL, "debian/rules": "#!/usr/bin/make -f\n"})
    assert members("x_1-1.debian.tar.xz", data, {superficial.CONTROL}) == {superficial.CONTROL: CONTROL}
    native = tarball({"debian/tests/control": SHALLOW, "src/x.c": ""}, prefix="x-1/", mode="w:gz")
    assert members("x_1.tar.gz", native, {superficial.CONTROL}) == {superficial.CONTROL: SHALLOW}


def test_members_of_a_format_1_diff() -> None:
    diff = ("--- x-1.orig/debian/tests/control\n+++ x-1/debian/tests/control\n@@ -0,0 +1,3 @@\n"
            + "".join("+" + line + "\n" for line in SHALLOW.splitlines())
            + "--- x-1.orig/debian/rules\n+++ x-1/debian/rules\n@@ -0,0 +1 @@\n+%:\n")
    assert diff_members(diff, {superficial.CONTROL}) == {superficial.CONTROL: SHALLOW}
    assert members("x_1-1.diff.gz", gzip.compress(diff.encode()), {superficial.CONTROL}) == {
        superficial.CONTROL: SHALLOW}


@pytest.mark.parametrize(("files", "holder"), [
    (["x_1-1.dsc", "x_1.orig.tar.gz", "x_1-1.debian.tar.xz"], "x_1-1.debian.tar.xz"),
    (["x_1-1.dsc", "x_1.orig.tar.gz", "x_1-1.diff.gz"], "x_1-1.diff.gz"),
    (["x_1.dsc", "x_1.tar.xz"], "x_1.tar.xz"),
    (["x_1.dsc"], None),
])
def test_the_file_that_holds_debian(files: list[str], holder: str | None) -> None:
    found = debian_file(entry(files=files).files)
    assert (found.name if found else None) == holder


def test_a_tarball_too_big_or_unreadable_leaves_the_verdict_open(monkeypatch) -> None:
    big = entry()
    big.files[2].size = superficial.MAX_BYTES + 1
    judged = superficial.check_superficial(big)
    assert judged.superficial is None and "MB" in judged.missing[0]
    monkeypatch.setattr(superficial, "fetch", lambda file, timeout=30.0: b"not a tarball")
    judged = superficial.check_superficial(entry())
    assert judged.superficial is None and judged.missing[0].startswith("tests not read")
