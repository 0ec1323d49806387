"""Which inner runner gives an autopkgtest test's per-test results, and how it is made to
print one line per test without touching the package's files.

Guessed from the test's command (or its script's text) and the source tree: the team
runners autodep8 calls (pkg-perl-autopkgtest's prove, dh-golang's ``go test``,
gem2deb-test-runner's rspec, pkg-r-autopkgtest's testthat, dh_elpa_test's ERT), debcargo's
``cargo-auto-test`` (libtest), and the same tools named in a package's own script. A wrong
guess costs little: a converter that finds no per-test line in the output falls back to one
result for the whole test.

A verbose setting is ``NAME=VALUE`` (set) or ``NAME+=VALUE`` (appended, space-separated,
to what the environment already holds); values have no spaces. ``@testthat-location`` asks
the runner to point ``R_PROFILE_USER`` at a profile of its own that selects testthat's
location reporter.
"""

from __future__ import annotations

import re
from pathlib import Path

from cligym.models.debian_tests import InnerRunner

#: the settings per runner. prove's ``-v`` has no environment switch: TEST_VERBOSE and
#: HARNESS_VERBOSE reach the harness when tests run through ``make test`` / ``./Build test``
#: (TAP::Harness::Env); pkg-perl-autopkgtest's own prove call keeps its options.
VERBOSE: dict[InnerRunner, list[str]] = {
    "tap": ["TEST_VERBOSE=1", "HARNESS_VERBOSE=1"],
    "gotest": ["GOFLAGS+=-v"],  # go test reads its flags from GOFLAGS too; -v: === RUN / --- PASS lines
    "rspec": ["SPEC_OPTS+=--format=documentation"],  # rspec reads extra options from SPEC_OPTS
    "libtest": [],  # libtest's default (pretty) output already has a line per test
    "testthat": ["@testthat-location"],
    "ert": [],  # ert-run-tests-batch prints a line per test
    "none": [],
}

_COMMAND_RULES: list[tuple[str, InnerRunner]] = [
    (r"pkg-perl-autopkgtest/runner|(^|[\s;&|(/])prove(\s|$)", "tap"),
    (r"dh_golang_autopkgtest|(^|[\s;&|(])go\s+test\b", "gotest"),
    (r"cargo-auto-test|(^|[\s;&|(])cargo\s+test\b", "libtest"),
    (r"dh_elpa_test|ert-run-tests-batch", "ert"),
    (r"(^|[\s;&|(/])rspec(\s|$)", "rspec"),
    (r"testthat", "testthat"),
    (r"(^|[\s;&|(/])(tap|tape)(\s|$)|node-tap", "tap"),
]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:100_000]
    except OSError:
        return ""


def _ruby_runner(tree: Path) -> InnerRunner:
    """gem2deb-test-runner runs debian/ruby-tests.rake (rspec when it makes an RSpec task),
    debian/ruby-tests.rb or the files of debian/ruby-test-files.yaml (minitest or plain
    ruby: no per-test reader here), else rspec when the tree has spec/."""
    rake = tree / "debian" / "ruby-tests.rake"
    if rake.is_file():
        return "rspec" if re.search(r"rspec", _read(rake), re.IGNORECASE) else "none"
    if (tree / "debian" / "ruby-tests.rb").is_file() or (tree / "debian" / "ruby-test-files.yaml").is_file():
        return "none"
    return "rspec" if (tree / "spec").is_dir() else "none"


def inner_runner(command: str, tree: Path, script: str = "") -> InnerRunner:
    """The runner of a test whose command is ``command`` (for a script test: its path,
    with the script's text in ``script``)."""
    if "gem2deb-test-runner" in command or "gem2deb-test-runner" in script:
        return _ruby_runner(tree)
    if "pkg-js-autopkgtest/runner" in command:
        if command.rstrip().endswith(" require"):
            return "none"
        script = _read(tree / "debian" / "tests" / "pkg-js" / "test")
        command = ""
    if "pkg-r-autopkgtest" in command:
        return "testthat" if (tree / "tests" / "testthat").is_dir() else "none"
    if re.search(r"\bpy3versions\b.*-c\s+\"import", command):
        return "none"  # autodep8's python import check
    for text in (command, script):
        for pattern, runner in _COMMAND_RULES:
            if text and re.search(pattern, text, re.MULTILINE):
                return runner
    return "none"


def verbose_env(runner: InnerRunner) -> list[str]:
    return list(VERBOSE[runner])
