"""The small deb822 reader: paragraphs, signed .dsc files, relation names, file lists,
compressed indexes and Debian's version order."""

from __future__ import annotations

import gzip
import lzma

import pytest

from cligym.debian.deb822 import (
    compare_versions,
    field,
    file_lines,
    kept_index,
    open_index,
    paragraphs,
    parse,
    relation_names,
    split_version,
    strip_signature,
    words,
)

SOURCES = """\
Package: node-ini
Binary: node-ini
Version: 3.0.1-2
Build-Depends: debhelper-compat (= 13), dh-sequence-nodejs
Architecture: all
Format: 3.0 (quilt)
Files:
 5e2a8c1b0e0b3c6a1a0f6a3e2c9d7b11 1983 node-ini_3.0.1-2.dsc
 0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e 11079 node-ini_3.0.1.orig.tar.gz
Checksums-Sha256:
 75042ff9aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1983 node-ini_3.0.1-2.dsc
 4a596202bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb 11079 node-ini_3.0.1.orig.tar.gz
Testsuite: autopkgtest-pkg-nodejs
Directory: pool/main/n/node-ini

# a comment between paragraphs
Package: json-c
Version: 0.16-2
Description: first line
 second line
 .
 after an empty line
"""

DSC = """\
-----BEGIN PGP SIGNED MESSAGE-----
Hash: SHA512

Format: 3.0 (quilt)
Source: json-c
Binary: libjson-c5, libjson-c-dev
Version: 0.16-2
Testsuite: autopkgtest
Testsuite-Triggers: cmake, gcc, libc-dev
Build-Depends: debhelper-compat (= 13), cmake, doxygen
Checksums-Sha256:
 3ecaeedffd99a60b1262819f9e60d7d983844073abc74e495cb822b251904185 337024 json-c_0.16.orig.tar.gz
 64e4334da662d62b735a876567620121f9f07cac9ad01f989034cbcf45c8ac84 8668 json-c_0.16-2.debian.tar.xz
- -- a dash-escaped line
-----BEGIN PGP SIGNATURE-----

iQIzBAEBCgAdFiEE
-----END PGP SIGNATURE-----
"""


def test_paragraphs_fields_continuations_and_comments() -> None:
    first, second = paragraphs(SOURCES.splitlines(keepends=True))
    assert first["Package"] == "node-ini" and first["Testsuite"] == "autopkgtest-pkg-nodejs"
    assert first["Files"].splitlines()[2].endswith("node-ini_3.0.1.orig.tar.gz")
    assert second == {"Package": "json-c", "Version": "0.16-2",
                      "Description": "first line\nsecond line\n\nafter an empty line"}


def test_a_signed_dsc_reads_as_its_fields() -> None:
    (dsc,) = parse(DSC)
    assert dsc["Source"] == "json-c" and dsc["Version"] == "0.16-2" and dsc["Testsuite"] == "autopkgtest"
    assert [name for _, _, name in file_lines(dsc["Checksums-Sha256"])] == [
        "json-c_0.16.orig.tar.gz", "json-c_0.16-2.debian.tar.xz"]
    assert "-- a dash-escaped line" in strip_signature(DSC)
    assert "BEGIN PGP" not in strip_signature(DSC)
    assert strip_signature("Package: x\n") == "Package: x\n"


def test_field_names_are_case_insensitive() -> None:
    assert field({"Testsuite": "autopkgtest"}, "TestSuite") == "autopkgtest"
    assert field({}, "Testsuite", "none") == "none"


@pytest.mark.parametrize(("value", "names"), [
    ("debhelper-compat (= 13), cmake, doxygen", ["debhelper-compat", "cmake", "doxygen"]),
    ("libfoo-dev [amd64 arm64] | libbar-dev, perl:native, python3 <!nocheck>,\n libc6 (>= 2.36)",
     ["libfoo-dev", "libbar-dev", "perl", "python3", "libc6"]),
    ("@, @builddeps@, node-tap", ["@", "@builddeps@", "node-tap"]),
    ("a, a (>= 1), ", ["a"]),
])
def test_relation_names(value: str, names: list[str]) -> None:
    assert relation_names(value) == names


def test_words_split_on_commas_and_space() -> None:
    assert words("libjson-c5, libjson-c-dev,\n libjson-c-doc") == ["libjson-c5", "libjson-c-dev", "libjson-c-doc"]
    assert words("") == []


@pytest.mark.parametrize(("a", "b", "sign"), [
    ("1.0", "1.0-1", -1), ("1.0~rc1", "1.0", -1), ("1:0.9", "2.0", 1), ("0.86+ds-1", "0.86+ds-1+deb12u1", -1),
    ("1.2.10", "1.2.9", 1), ("1.0a", "1.0+", -1), ("1.0", "1.0.0", -1), ("2.0-1", "2.0-1", 0),
    ("1.0~~", "1.0~", -1), ("7.88.1-10+deb12u5", "7.88.1-10+deb12u12", -1),
])
def test_debian_version_order(a: str, b: str, sign: int) -> None:
    result = compare_versions(a, b)
    assert (result > 0) - (result < 0) == sign
    reverse = compare_versions(b, a)
    assert (reverse > 0) - (reverse < 0) == -sign


def test_split_version() -> None:
    assert split_version("1:2.3-4-5") == (1, "2.3-4", "5")
    assert split_version("3.0.1") == (0, "3.0.1", "")


@pytest.mark.parametrize("suffix", ["", ".gz", ".xz"])
def test_indexes_read_whatever_their_compression(tmp_path, suffix: str) -> None:
    name = tmp_path / "host_debian_dists_suite_main_source_Sources"
    data = SOURCES.encode()
    compressed = {"": data, ".gz": gzip.compress(data), ".xz": lzma.compress(data)}[suffix]
    (tmp_path / (name.name + suffix)).write_bytes(compressed)
    kept = kept_index(name)
    assert kept is not None and kept.name == name.name + suffix
    with open_index(kept) as handle:
        assert [p["Package"] for p in paragraphs(handle)] == ["node-ini", "json-c"]


def test_a_missing_index_is_none(tmp_path) -> None:
    assert kept_index(tmp_path / "absent_Sources") is None
