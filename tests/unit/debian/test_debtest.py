"""debtest.sh on the host, against a tiny fake source tree whose tests are shell scripts
written here (no package's code runs), with the converters under busybox awk."""

from __future__ import annotations

import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cligym.debian import control as tests_control
from cligym.debian.control import read_tests
from cligym.harness.testrun import is_debtest_report, parse_junit
from cligym.harness.bundle import host_busybox

SCRIPTS = Path(__file__).resolve().parents[3] / "src" / "cligym" / "harness" / "scripts"
BUSYBOX = str(host_busybox())  # the one every task ships

pytestmark = pytest.mark.skipif(not os.path.exists(BUSYBOX), reason="busybox is not installed")

CONTROL = "Source: fake\nTestsuite: autopkgtest\n\nPackage: fake\nArchitecture: all\n"
TESTS = """\
Tests: tap-ok, noisy, quiet-fail
Restrictions: allow-stderr

Tests: strict
Depends: @

Tests: skipper
Restrictions: skippable

Test-Command: echo "env $AUTOPKGTEST_TMP $ADTTMP $AUTOPKGTEST_ARTIFACTS $LANG"; apt-get install x
Features: test-name=env-check

Test-Command: exit 0
Restrictions: needs-internet
"""
SCRIPTS_OF_TESTS = {
    # prove -v's output shape: the runner is guessed from the script's text (prove)
    "tap-ok": "#!/bin/sh\n# prove -v t/\necho 't/a.t .. '\necho '1..2'\n"
              "echo 'ok 1 - one'\necho 'ok 2 - two'\necho ok\n",
    "noisy": "#!/bin/sh\necho 'warning' >&2\n",
    "quiet-fail": "#!/bin/sh\nexit 3\n",
    "strict": "#!/bin/sh\necho 'oops' >&2\n",
    "skipper": "#!/bin/sh\nexit 77\n",
}


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "src"
    (root / "debian" / "tests").mkdir(parents=True)
    (root / "debian" / "control").write_text(CONTROL)
    (root / "debian" / "tests" / "control").write_text(TESTS)
    for name, text in SCRIPTS_OF_TESTS.items():
        path = root / "debian" / "tests" / name
        path.write_text(text)
        path.chmod(0o755 if name != "noisy" else 0o644)  # autopkgtest makes a script executable itself
    listing = tmp_path / "tests.tsv"
    tests_control.write_tests_tsv(read_tests(root), listing)
    return root, listing


def debtest(root: Path, listing: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DEBTEST_TESTS": str(listing), "DEBTEST_AWK": f"{BUSYBOX} awk",
           "DEBTEST_RESULTS": str(tmp_path / "results")}
    return subprocess.run(["sh", str(SCRIPTS / "debtest.sh"), *args], cwd=root, env=env, capture_output=True,
                          text=True, check=False)


def test_every_test_then_the_report(source: tuple[Path, Path], tmp_path: Path) -> None:
    root, listing = source
    report = tmp_path / "report.xml"
    proc = debtest(root, listing, tmp_path, f"--junitxml={report}")
    assert proc.returncode == 1, proc.stderr
    xml = report.read_bytes()
    assert is_debtest_report(ET.fromstring(xml))
    got = {k: v.outcome for k, v in parse_junit(xml).items()}
    assert got == {"tap-ok::t/a.t::1 - one": "passed", "tap-ok::t/a.t::2 - two": "passed",
                   "noisy": "passed", "quiet-fail": "failed", "strict": "failed", "skipper": "skipped",
                   "env-check": "failed"}  # its apt-get was refused (exit 100)
    env_out = (tmp_path / "results" / "env-check.stdout").read_text()
    assert env_out.startswith("env /") and "C.UTF-8" in env_out and "env-check-artifacts" in env_out
    assert "apt-get is not run" in (tmp_path / "results" / "env-check.stderr").read_text()
    assert (tmp_path / "results" / "quiet-fail.exit").read_text().strip() == "3"
    assert parse_junit(xml)["strict"].message.startswith("stderr: oops")


def test_ids_pick_whole_tests(source: tuple[Path, Path], tmp_path: Path) -> None:
    root, listing = source
    report = tmp_path / "report.xml"
    proc = debtest(root, listing, tmp_path, "tap-ok::t/a.t::1 - one", f"--junitxml={report}", "noisy")
    assert proc.returncode == 0, proc.stderr
    got = parse_junit(report.read_bytes(), ["tap-ok::t/a.t::1 - one", "strict"])
    assert {k: v.outcome for k, v in got.items()} == {
        "tap-ok::t/a.t::1 - one": "passed", "tap-ok::t/a.t::2 - two": "passed", "noisy": "passed",
        "strict": "missing"}


def test_unknown_options_and_a_missing_list(source: tuple[Path, Path], tmp_path: Path) -> None:
    root, listing = source
    proc = debtest(root, listing, tmp_path, "--verbose")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "--verbose" in proc.stderr
    proc = debtest(root, tmp_path / "absent.tsv", tmp_path)
    assert proc.returncode == 3
    proc = debtest(root, listing, tmp_path, "no-such-test")
    assert proc.returncode == 5
