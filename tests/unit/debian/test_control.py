"""debian/tests/control and autodep8's generated tests, read as autopkgtest reads them."""

from __future__ import annotations

from pathlib import Path

from cligym.debian import control as tests_control
from cligym.debian.control import parse_stanzas, read_tests

CONTROL = """\
Source: json-c
Build-Depends: debhelper-compat (= 13), cmake <!nocheck>, doxygen <nodoc>,
 libfoo-dev [amd64] | libbar-dev
Testsuite: autopkgtest

Package: libjson-c5
Architecture: any

Package: libjson-c-dev
Architecture: any
Recommends: pkg-config, ${misc:Recommends}

Package: json-c-udeb
Package-Type: udeb
Architecture: any

Package: libjson-c-s390x
Architecture: s390x
"""

TESTS = """\
# the upstream test suite against the installed library
Tests: unit-tests, api
Depends: @, @builddeps@, python3 (>= 3.9) | python3-minimal
Restrictions: allow-stderr, # inline comment
 superficial
Tests-Directory: debian/upstream-tests

Test-Command: echo one;
 echo two
Restrictions: needs-internet

Test-Command: ./run-it
Features: test-name=named-one
Depends: @recommends@

Test-Command: true
Restrictions: build-needed, flaky

Tests: vm
Restrictions: isolation-machine
Classes: desktop

Tests: hint
Restrictions: hint-testsuite-triggers
Depends: foo

Tests: odd
Restrictions: made-up

Tests: s390
Architecture: s390x
"""


def tree(tmp_path: Path, control: str = CONTROL, tests: str | None = TESTS) -> Path:
    (tmp_path / "debian" / "tests").mkdir(parents=True)
    (tmp_path / "debian" / "control").write_text(control)
    if tests is not None:
        (tmp_path / "debian" / "tests" / "control").write_text(tests)
    return tmp_path


def test_stanzas_comments_and_continuation_lines() -> None:
    stanzas = parse_stanzas(TESTS)
    assert stanzas[0].tests == ["unit-tests", "api"]
    assert stanzas[0].restrictions == ["allow-stderr", "superficial"]
    assert stanzas[0].tests_directory == "debian/upstream-tests"
    assert stanzas[1].test_command == "echo one; echo two"
    assert stanzas[1].depends == "@"  # the default
    assert stanzas[4].classes == ["desktop"]


def test_names_paths_and_what_can_run(tmp_path: Path) -> None:
    found = read_tests(tree(tmp_path))
    by_name = {t.name: t for t in found.tests}
    assert list(by_name) == ["unit-tests", "api", "command1", "named-one", "command2", "vm", "hint", "odd", "s390"]
    assert by_name["api"].path == "debian/upstream-tests/api" and by_name["api"].superficial
    assert by_name["unit-tests"].runnable and by_name["named-one"].runnable
    assert by_name["command1"].why_not.startswith("needs-internet")
    assert by_name["command2"].why_not.startswith("build-needed") and by_name["command2"].flaky
    assert by_name["vm"].why_not.startswith("isolation-machine")
    assert by_name["hint"].why_not.startswith("hint-testsuite-triggers")
    assert "unknown restriction made-up" in by_name["odd"].why_not
    assert by_name["s390"].why_not.startswith("not for amd64")


def test_install_lists(tmp_path: Path) -> None:
    found = read_tests(tree(tmp_path))
    assert found.source == "json-c" and found.binaries == ["libjson-c5", "libjson-c-dev"]
    unit = next(t for t in found.tests if t.name == "unit-tests")
    assert unit.install_list() == ["libjson-c5", "libjson-c-dev", "debhelper-compat (= 13)", "cmake", "libfoo-dev",
                                   "build-essential", "python3 (>= 3.9)"]
    assert unit.install_list("arm64")[4] == "libbar-dev"  # the first alternative for arm64
    named = next(t for t in found.tests if t.name == "named-one")
    assert named.install_list() == ["pkg-config"]  # @recommends@, substitution variables dropped


def test_autodep8_perl_alone_and_after_the_written_tests(tmp_path: Path) -> None:
    control = "Source: libfoo-perl\nTestsuite: autopkgtest-pkg-perl\nBuild-Depends: libtest-simple-perl\n\n" \
              "Package: libfoo-perl\nArchitecture: all\n"
    found = read_tests(tree(tmp_path, control, tests=None))
    assert [t.name for t in found.tests] == ["autodep8-perl-build-deps", "autodep8-perl", "autodep8-perl-recommends"]
    build = found.tests[0]
    assert build.command == "/usr/share/pkg-perl-autopkgtest/runner build-deps" and build.runner == "tap"
    assert build.restrictions == ["skippable"] and "TEST_VERBOSE=1" in build.verbose_env
    assert "pkg-perl-autopkgtest" in build.install_list() and "libtest-simple-perl" in build.install_list()
    assert found.tests[1].superficial and found.team == "perl"


def test_autodep8_go_ruby_and_a_conf_file(tmp_path: Path) -> None:
    control = "Source: golang-github-pkg-errors\nTestsuite: autopkgtest-pkg-go\n\n" \
              "Package: golang-github-pkg-errors-dev\nArchitecture: all\n"
    root = tree(tmp_path, control, tests="Tests: extra\n")
    (root / "debian" / "tests" / "autopkgtest-pkg-go.conf").write_text(
        "# conf\nextra_depends = git,\\\n  ca-certificates\nextra_restrictions=needs-internet\n")
    found = read_tests(root)
    assert [t.name for t in found.tests] == ["extra", "dh-golang-autopkgtest"]
    go = found.tests[1]
    assert go.runner == "gotest" and go.verbose_env == ["GOFLAGS+=-v"]
    assert "git" in go.install_list() and "ca-certificates" in go.install_list()
    assert not go.runnable and go.why_not.startswith("needs-internet")


def test_ruby_rspec_and_script_runners(tmp_path: Path) -> None:
    control = "Source: ruby-hashie\nTestsuite: autopkgtest-pkg-ruby\nBuild-Depends: debhelper-compat (= 13), " \
              "gem2deb, ruby-rspec\n\nPackage: ruby-hashie\nArchitecture: all\n"
    root = tree(tmp_path, control, tests="Tests: upstream\nDepends: @, perl\n")
    (root / "debian" / "ruby-tests.rake").write_text("require 'gem2deb/rake/spectask'\nGem2Deb::Rake::RSpecTask.new\n")
    (root / "debian" / "tests" / "upstream").write_text("#!/bin/sh\nprove -lr t/\n")
    found = read_tests(root)
    assert {t.name: t.runner for t in found.tests} == {"upstream": "tap", "gem2deb-test-runner": "rspec"}
    ruby = found.tests[1]
    assert "SPEC_OPTS+=--format=documentation" in ruby.verbose_env
    assert "ruby-rspec" in ruby.install_list() and "gem2deb" not in ruby.install_list()


def test_tests_tsv(tmp_path: Path) -> None:
    text = tests_control.tests_tsv(read_tests(tree(tmp_path)))
    lines = text.splitlines()
    assert lines[0].startswith("# ")
    assert lines[1] == "unit-tests\tallow-stderr,superficial\tnone\t-\tpath\tdebian/upstream-tests/unit-tests"
    assert lines[3] == "named-one\t-\tnone\t-\tcommand\t./run-it"
    assert len(lines) == 4  # the runnable tests only
