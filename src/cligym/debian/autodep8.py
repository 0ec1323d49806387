"""The tests autodep8 generates for ``Testsuite: autopkgtest-pkg-<team>`` packages, as
stanzas of ``debian/tests/control``.

Learned from autodep8's ``support/<team>/generate`` scripts (read, not copied): the same
commands, test names, dependencies and restrictions, and its per-package configuration
``debian/tests/autopkgtest-pkg-<team>.conf`` (``extra_depends``, ``extra_restrictions``,
``architecture``, python's ``import_name``). Rust has no autodep8 support: debcargo writes
rust packages' ``debian/tests/control`` itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from cligym.debian.depends import SourceControl, control_paragraphs
from cligym.models.debian_tests import TestStanza

PERL_RUNNER = "/usr/share/pkg-perl-autopkgtest/runner"
JS_RUNNER = "/usr/share/pkg-js-autopkgtest/runner"


def read_config(tree: Path, team: str) -> dict[str, str]:
    """``debian/tests/autopkgtest-pkg-<team>.conf``: ``name = value`` lines, ``#`` comment
    lines, a trailing backslash continues a line."""
    path = tree / "debian" / "tests" / f"autopkgtest-pkg-{team}.conf"
    if not path.is_file():
        return {}
    text = re.sub(r"\\\n", "", path.read_text(encoding="utf-8", errors="replace"))
    conf = {}
    for line in text.splitlines():
        if line.strip().startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", key.strip()):
            conf[key.strip()] = value.strip()
    return conf


def _stanza(team: str, conf: dict[str, str], name: str, command: str, depends: list[str],
            restrictions: list[str]) -> TestStanza:
    deps = [d for d in [*depends, conf.get("extra_depends", "")] if d.strip()]
    extra = [r for r in re.split(r"[\s,]+", conf.get("extra_restrictions", "")) if r]
    return TestStanza(test_command=command, depends=", ".join(deps), restrictions=[*restrictions, *extra],
                      features=[f"test-name={name}"], architecture=conf.get("architecture", "").split(),
                      origin=f"autodep8:{team}")


def _perl(tree: Path, control: SourceControl, conf: dict[str, str]) -> list[TestStanza]:
    return [
        _stanza("perl", conf, "autodep8-perl-build-deps", f"{PERL_RUNNER} build-deps",
                ["@", "@builddeps@", "pkg-perl-autopkgtest"], ["skippable"]),
        _stanza("perl", conf, "autodep8-perl", f"{PERL_RUNNER} runtime-deps",
                ["@", "pkg-perl-autopkgtest"], ["skippable", "superficial"]),
        _stanza("perl", conf, "autodep8-perl-recommends", f"{PERL_RUNNER} runtime-deps-and-recommends",
                ["@", "pkg-perl-autopkgtest"], ["needs-recommends", "skippable", "superficial"]),
    ]


def _go(tree: Path, control: SourceControl, conf: dict[str, str]) -> list[TestStanza]:
    # allow-stderr: go's tools print their progress on stderr
    return [_stanza("go", conf, "dh-golang-autopkgtest", "/usr/bin/dh_golang_autopkgtest",
                    ["@", "@builddeps@", "dh-golang"], ["allow-stderr"])]


def _nodejs(tree: Path, control: SourceControl, conf: dict[str, str]) -> list[TestStanza]:
    return [
        _stanza("nodejs", conf, "pkg-js-autopkgtest-require", f"{JS_RUNNER} require",
                ["@", "nodejs", "pkg-js-autopkgtest"], ["superficial", "skippable"]),
        _stanza("nodejs", conf, "pkg-js-autopkgtest", JS_RUNNER,
                ["@", "@builddeps@", "pkg-js-autopkgtest"], ["allow-stderr", "skippable"]),
    ]


def _ruby(tree: Path, control: SourceControl, conf: dict[str, str]) -> list[TestStanza]:
    # the build dependencies less debhelper and gem2deb, profiles dropped, listed as written
    items = [re.sub(r"\s*<[^>]*>\s*$", "", i.strip()) for i in control.source.get("Build-Depends", "").split(",")]
    deps = [i for i in items if i and "debhelper" not in i and "gem2deb" not in i]
    return [_stanza("ruby", conf, "gem2deb-test-runner", "gem2deb-test-runner --autopkgtest --check-dependencies 2>&1",
                    ["@", *deps, "gem2deb-test-runner"], ["skippable"])]


def _r(tree: Path, control: SourceControl, conf: dict[str, str]) -> list[TestStanza]:
    # autodep8 keeps the DESCRIPTION's Suggests that the archive has as r-cran-*/r-bioc-*;
    # without the archive here, each becomes r-cran-<name> | r-bioc-<name>
    suggests: list[str] = []
    description = tree / "DESCRIPTION"
    if description.is_file():
        for stanza in control_paragraphs(description.read_text(encoding="utf-8", errors="replace").splitlines()):
            for item in stanza.get("Suggests", "").split(","):
                name = re.sub(r"\(.*?\)", "", item).strip().lower()
                if name:
                    suggests.append(f"r-cran-{name} | r-bioc-{name}")
    return [_stanza("r", conf, "pkg-r-autopkgtest", "/usr/share/dh-r/pkg-r-autopkgtest",
                    ["@", *suggests, "pkg-r-autopkgtest"], ["allow-stderr"])]


def _elpa(tree: Path, control: SourceControl, conf: dict[str, str]) -> list[TestStanza]:
    # rw-build-tree: dh_elpa_test renames the tree's non-test .el files so Emacs loads the
    # installed package's
    return [_stanza("elpa", conf, "dh-elpa-test-autopkgtest", "dh_elpa_test --autopkgtest",
                    ["@", "@builddeps@"], ["rw-build-tree"])]


def _python_module(control: SourceControl, conf: dict[str, str]) -> tuple[str, str]:
    """(python3 binary package, import name) as autodep8 guesses them."""
    source = control.name
    package = ""
    if re.match(r"^python3?-", source):
        package = "python3-" + source.split("-", 1)[1]
    else:
        for stanza in control.packages:
            name = stanza["Package"]
            if re.match(r"^python3?-", name) and not re.search(r"-(doc|dbg|dbgsym|dev)$", name):
                package = "python3-" + name.split("-", 1)[1]
                break
    if package not in {s["Package"] for s in control.packages}:
        return "", ""
    module = conf.get("import_name") or package.split("-", 1)[1].replace("-", "_")
    return package, module


def _python(tree: Path, control: SourceControl, conf: dict[str, str]) -> list[TestStanza]:
    package, module = _python_module(control, conf)
    if not package:
        return []
    dev_only = "python3-dev" in control.source.get("Build-Depends", "") and \
        "python3-all-dev" not in control.source.get("Build-Depends", "")
    versions = "-d" if dev_only else "-r"
    command = (f'set -e ; for py in $(py3versions {versions} 2>/dev/null) ; do cd "$AUTOPKGTEST_TMP" ; '
               f'echo "Testing with $py:" ; $py -c "import {module}; print({module})" ; done')
    return [_stanza("python", conf, "autodep8-python3", command, ["python3-all", package],
                    ["allow-stderr", "superficial"])]


def _pybuild(tree: Path, control: SourceControl, conf: dict[str, str]) -> list[TestStanza]:
    return [_stanza("pybuild", conf, "pybuild-autopkgtest", "pybuild-autopkgtest",
                    ["@", "pybuild-plugin-autopkgtest", "@builddeps@"], ["allow-stderr", "skippable"])]


GENERATORS: dict[str, Callable[[Path, SourceControl, dict[str, str]], list[TestStanza]]] = {
    "perl": _perl, "go": _go, "nodejs": _nodejs, "ruby": _ruby, "r": _r, "elpa": _elpa,
    "python": _python, "pybuild": _pybuild,
}


def team_of(control: SourceControl) -> str:
    """The ``<team>`` of ``Testsuite: autopkgtest-pkg-<team>``, or empty."""
    for suite in control.testsuites:
        if suite.startswith("autopkgtest-pkg-"):
            return suite.removeprefix("autopkgtest-pkg-")
    return ""


def generated(tree: Path, control: SourceControl) -> list[TestStanza]:
    """The stanzas autodep8 generates for the source's team (none for a team it does not
    know, nor when the source names no team: cligym does not guess a team from the tree)."""
    team = team_of(control)
    generator = GENERATORS.get(team)
    return generator(tree, control, read_config(tree, team)) if generator else []
