"""The inner runners' converters (harness/scripts/junit/*.awk) under busybox awk, on samples
written from each runner's documented output:

- prove.txt: TAP (testanything.org, TAP 13 specification) as App::Prove prints it, verbose
  and not (prove(1): "t/x.t .. ok", "Dubious", "Failed N/M subtests", "skipped:");
- node-tap.txt: TAP 13 with indented subtests and node-tap's "# time=" directive (node-tap's
  docs, "TAP format");
- gotest.txt: `go test -v` (cmd/go "Testing flags", the testing package: "=== RUN",
  "--- PASS/FAIL/SKIP", the package summary lines);
- libtest.txt: cargo test's default output (The Cargo Book, "cargo test"; libtest's pretty
  formatter);
- rspec.txt: RSpec's documentation formatter (rspec-core, "--format documentation") after
  gem2deb-test-runner's banner;
- ert.txt: ERT's batch output (Emacs ERT manual, "Running Tests in Batch Mode");
- testthat-location.txt / testthat-check.txt: testthat's LocationReporter and
  CheckReporter (testthat reference, "Reporters").
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cligym.debian.results import COMMON, converter_name
from cligym.harness.testrun import parse_junit
from cligym.harness.bundle import host_busybox

SAMPLES = Path(__file__).parent / "samples"
JUNIT = Path(__file__).resolve().parents[3] / "src" / "cligym" / "harness" / "scripts" / "junit"
BUSYBOX = str(host_busybox())  # the one every task ships

pytestmark = pytest.mark.skipif(not os.path.exists(BUSYBOX), reason="busybox is not installed")


def convert(runner: str, text: str, tmp_path: Path, test: str = "t", rc: int = 0, stderr_ok: int = 1,
            stderr_bytes: int = 0, skippable: int = 0, stderr_top: str = "") -> dict:
    stdout = tmp_path / "stdout"
    stdout.write_text(text, encoding="utf-8")
    proc = subprocess.run(
        [BUSYBOX, "awk", "-v", f"test={test}", "-v", f"rc={rc}", "-v", f"stderr_ok={stderr_ok}",
         "-v", f"stderr_bytes={stderr_bytes}", "-v", f"skippable={skippable}",
         "-f", str(JUNIT / COMMON), "-f", str(JUNIT / converter_name(runner)), str(stdout)],
        capture_output=True, check=True, env={**os.environ, "DEBTEST_STDERR_TOP": stderr_top})
    xml = b"<testsuites><testsuite name='autopkgtest'>" + proc.stdout + b"</testsuite></testsuites>"
    return {k: v.outcome for k, v in parse_junit(xml).items()}


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def test_prove_verbose_and_per_file(tmp_path: Path) -> None:
    got = convert("tap", sample("prove.txt"), tmp_path, test="smoke", rc=1)
    assert got == {
        "smoke::t/basic.t::1 - loads": "passed",
        'smoke::t/basic.t::2 - adds "1" & <2>': "failed",
        "smoke::t/basic.t::3 - skipped one": "skipped",
        "smoke::t/sub.t::1.1 - inner a": "passed", "smoke::t/sub.t::1.2 - inner b": "passed",
        "smoke::t/sub.t::1 - group": "passed",
        "smoke::t/sub.t::2 - later": "passed",  # not ok # TODO is no failure
        "smoke::t/sub.t::exit": "failed",  # Dubious while its tests passed
        "smoke::t/sub.t::3": "failed", "smoke::t/sub.t::4": "failed",  # planned 4, ran 2
        "smoke::t/quiet.t": "passed", "smoke::t/skip.t": "skipped",
    }


def test_node_tap_subtests_time_and_bail_out(tmp_path: Path) -> None:
    got = convert("tap", sample("node-tap.txt"), tmp_path, test="pkg-js-autopkgtest", rc=1)
    assert got["pkg-js-autopkgtest::1.1.1 - should be equal"] == "passed"
    assert got["pkg-js-autopkgtest::1.1.2 - should match"] == "failed"
    assert got["pkg-js-autopkgtest::1.2 - stringifies"] == "passed"  # "# time=1ms" is not in the id
    assert got["pkg-js-autopkgtest::2 - test/empty.js"] == "skipped"
    assert got["pkg-js-autopkgtest::Bail out!"] == "failed"
    assert got["pkg-js-autopkgtest::3"] == "failed"  # planned 3: the bail-out left it unrun


def test_go_test_v(tmp_path: Path) -> None:
    got = convert("gotest", sample("gotest.txt"), tmp_path, test="go", rc=1)
    assert got == {
        "go::github.com/pkg/errors::TestNew": "passed",
        "go::github.com/pkg/errors::TestFormat": "failed",
        "go::github.com/pkg/errors::TestFormat/plain": "passed",
        "go::github.com/pkg/errors::TestFormat/wrapped": "failed",
        "go::github.com/pkg/errors::TestSkip": "skipped",
        "go::github.com/pkg/errors/sub::TestNew": "passed",
        "go::github.com/pkg/errors/sub::TestCrash": "failed",  # panicked: no --- line
        "go::github.com/pkg/errors/broken::[package]": "failed",
    }


def test_libtest(tmp_path: Path) -> None:
    got = convert("libtest", sample("libtest.txt"), tmp_path, test="rust-foo:@", rc=101)
    assert got == {"rust-foo:@::tests::parses_empty": "passed", "rust-foo:@::tests::parses_bad": "failed",
                   "rust-foo:@::tests::slow": "skipped", "rust-foo:@::tests::net": "skipped",
                   "rust-foo:@::src/lib.rs - Foo::new (line 12)": "passed"}


def test_rspec_documentation(tmp_path: Path) -> None:
    got = convert("rspec", sample("rspec.txt"), tmp_path, test="gem2deb-test-runner", rc=1)
    assert got == {
        "gem2deb-test-runner::Hashie::Mash#initialize accepts a hash": "passed",
        "gem2deb-test-runner::Hashie::Mash#initialize converts keys": "failed",
        "gem2deb-test-runner::Hashie::Mash.load is pending": "skipped",
        'gem2deb-test-runner::Hashie::Mash with nested hashes reads "deep" & <values>': "passed",
        "gem2deb-test-runner::Hashie::Dash works": "passed",
    }


def test_ert(tmp_path: Path) -> None:
    got = convert("ert", sample("ert.txt"), tmp_path, test="elpa", rc=1)
    assert got == {"elpa::flycheck-parse-ok": "passed", "elpa::flycheck-parse-bad": "failed",
                   "elpa::flycheck-needs-gui": "skipped", "elpa::flycheck-known-bug": "passed"}


def test_testthat_location_and_check(tmp_path: Path) -> None:
    got = convert("testthat", sample("testthat-location.txt"), tmp_path, test="r", rc=1)
    assert got == {"r::test-read.R::parses a file": "passed", "r::test-read.R::handles NA": "failed",
                   "r::test-net.R::needs network": "skipped"}
    got = convert("testthat", sample("testthat-check.txt"), tmp_path, test="r", rc=1)
    assert got == {"r": "failed", "r::test-read.R::handles NA": "failed"}  # passes unnamed: the whole test too


def test_the_one_result_form(tmp_path: Path) -> None:
    assert convert("none", "anything\n", tmp_path, test="smoke") == {"smoke": "passed"}
    assert convert("none", "", tmp_path, test="smoke", rc=2) == {"smoke": "failed"}
    assert convert("none", "", tmp_path, test="smoke", rc=77, skippable=1) == {"smoke": "skipped"}
    assert convert("none", "", tmp_path, test="smoke", stderr_ok=0, stderr_bytes=5,
                   stderr_top="warning: x") == {"smoke": "failed"}
    # a runner that printed no per-test line falls back to the same form
    assert convert("gotest", "building...\n", tmp_path, test="go") == {"go": "passed"}


def test_a_crash_after_the_last_test_is_no_pass(tmp_path: Path) -> None:
    got = convert("libtest", "running 1 test\ntest a ... ok\n", tmp_path, test="rust", rc=101)
    assert got == {"rust::a": "passed", "rust::exit": "failed"}


def test_messages_are_escaped_and_kept(tmp_path: Path) -> None:
    stdout = tmp_path / "out"
    stdout.write_text(sample("libtest.txt"), encoding="utf-8")
    proc = subprocess.run([BUSYBOX, "awk", "-v", "test=r<&>", "-v", "rc=1", "-f", str(JUNIT / COMMON),
                           "-f", str(JUNIT / "libtest.awk"), str(stdout)], capture_output=True, check=True)
    xml = b"<testsuites><testsuite name='autopkgtest'>" + proc.stdout + b"</testsuite></testsuites>"
    results = parse_junit(xml)
    assert "assertion `left == right` failed" in results["r<&>::tests::parses_bad"].message
    assert b'classname="r&lt;&amp;&gt;"' in proc.stdout


def test_ids_keep_nothing_that_changes_between_runs(tmp_path: Path) -> None:
    """Two runs of one Perl test print other addresses and temporary names: the ids match."""
    run = "ok 1 - loaded HASH({a}) from HASH({b})\nok 2 - wrote /tmp/{t}/out.yml\nok 3 - 0x1f is small\n1..3\n"
    first = convert("tap", run.format(a="0x5621426e55c0", b="0x5621426e54e8", t="XyZ12ab"), tmp_path, test="p")
    second = convert("tap", run.format(a="0x55d0c3a1f0a8", b="0x55d0c3a1e9b0", t="Qw3rTy9"), tmp_path, test="p")
    assert first == second == {"p::1 - loaded HASH(0x_) from HASH(0x_)": "passed",
                                "p::2 - wrote /tmp/_/out.yml": "passed", "p::3 - 0x1f is small": "passed"}


def test_an_inner_result_missing_says_its_whole_test_failed(tmp_path: Path) -> None:
    """A suite that crashed before its first result leaves the inner ids a task lists
    missing: each says that its autopkgtest test failed as a whole, with that test's error
    (the end of its stderr), not only that it did not run."""
    stdout = tmp_path / "out"
    stdout.write_text("", encoding="utf-8")
    proc = subprocess.run([BUSYBOX, "awk", "-v", "test=pkg", "-v", "rc=1", "-v", "stderr_ok=0", "-v",
                           "stderr_bytes=40", "-f", str(JUNIT / COMMON), "-f", str(JUNIT / "tap.awk"), str(stdout)],
                          capture_output=True, check=True,
                          env={**os.environ, "DEBTEST_STDERR_TOP": "node:internal/modules/cjs/loader:1080",
                               "DEBTEST_STDERR_TAIL": "  throw err;\nError: Cannot find module 'x'"})
    xml = b"<testsuites><testsuite name='autopkgtest'>" + proc.stdout + b"</testsuite></testsuites>"
    results = parse_junit(xml, ["pkg::1 - parses", "other::2 - x"])
    assert results["pkg::1 - parses"].outcome == "missing"
    assert "pkg failed as a whole" in results["pkg::1 - parses"].message
    assert "Cannot find module" in results["pkg::1 - parses"].message
    assert results["other::2 - x"].message == "this test did not run"  # nothing says more about it


def test_the_verifiers_keys_name_what_the_converters_write(tmp_path: Path) -> None:
    """The Debian verifier's judge finds a test by (classname, name) as the converters write
    them, escaped: the keys made from the ids must match the report byte for byte."""
    from cligym.harness.debian_reference import junit_key

    stdout = tmp_path / "out"
    stdout.write_text("ok 1 - a \"quoted\" <tag> & more\n1..1\n", encoding="utf-8")
    proc = subprocess.run([BUSYBOX, "awk", "-v", "test=t&<", "-v", "rc=0", "-f", str(JUNIT / COMMON),
                           "-f", str(JUNIT / "tap.awk"), str(stdout)], capture_output=True, check=True)
    xml = b"<testsuites><testsuite name='autopkgtest'>" + proc.stdout + b"</testsuite></testsuites>"
    (test_id,) = parse_junit(xml)
    key = junit_key(test_id)
    assert f'classname="{key.classname}"'.encode() in proc.stdout and f'name="{key.name}"'.encode() in proc.stdout
    assert junit_key("smoke") == junit_key("smoke").model_copy(update={"name": "smoke"})  # the one-result form
