"""A source package's autopkgtest tests: ``debian/tests/control`` (and the tests autodep8
generates for a ``Testsuite: autopkgtest-pkg-<team>`` package), read as autopkgtest reads
them, judged for what cligym's runner can run, and written as the tests list the runner
(``harness/scripts/debtest.sh``) reads.

Names as autopkgtest gives them: a ``Tests:`` test is named by its script; a
``Test-Command:`` test by its ``Features: test-name=NAME``, else ``commandN`` (N counting
the unnamed command stanzas from 1). Dependencies default to ``@``. When the source names a
team and also has ``debian/tests/control``, the generated tests follow the written ones
(autodep8 prints the file first).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from cligym.debian import autodep8
from cligym.debian.depends import RelationError, SourceControl, control_paragraphs, expand_depends
from cligym.debian.runners import inner_runner, verbose_env
from cligym.models.debian_tests import AutopkgTest, DebianTests, TestStanza, arch_applies

KNOWN_FIELDS = {"Tests", "Test-Command", "Restrictions", "Features", "Depends", "Tests-Directory", "Classes",
                "Architecture"}

#: Restrictions whose test cligym's runner cannot run, and why. The runner never builds,
#: never installs, has no network and runs in a container of the gold image.
CANNOT_RUN = {
    "build-needed": "it needs the package built from source first; cligym's runner never builds "
                    "(a build would replace the installed packages the task is about)",
    "needs-internet": "it needs the network; cligym runs tests with the network off",
    "isolation-machine": "it needs a whole machine (a VM: kernel, init, services); cligym runs in a container",
    "needs-reboot": "it reboots the testbed; a container cannot",
    "hint-testsuite-triggers": "not a test: a hint for the archive's test scheduling (its command is not meant to run)",
}
#: What the other restrictions mean for the runner: each is honoured or harmless.
HONOURED = {
    "allow-stderr": "output on stderr does not fail the test",
    "skippable": "exit status 77 is a skip",
    "superficial": "runnable; it only shows the package installs and loads (a weak test)",
    "flaky": "runnable; its result is not to be trusted for a verdict",
    "needs-root": "runnable; cligym's test runs are root in the container",
    "breaks-testbed": "runnable; every cligym test run starts a fresh container",
    "isolation-container": "runnable; cligym's test runs are containers",
    "rw-build-tree": "runnable; the source tree in the container is writable",
    "needs-recommends": "its install list has the Recommends (at gold time); nothing to do at run time",
    "skip-not-installable": "about installation, done at gold time; nothing to do at run time",
    "needs-sudo": "runnable; cligym's test runs are root",
}


def stanza_of(fields: dict[str, str], origin: str = "control") -> TestStanza:
    def listed(name: str) -> list[str]:
        return [w for w in re.split(r"[\s,]+", fields.get(name, "")) if w]

    return TestStanza(
        tests=listed("Tests"), test_command=fields.get("Test-Command", "").strip(),
        depends=fields.get("Depends", "@"), restrictions=listed("Restrictions"), features=listed("Features"),
        classes=listed("Classes"),
        tests_directory=fields.get("Tests-Directory", "").strip() or "debian/tests",
        architecture=listed("Architecture"), unknown_fields=sorted(set(fields) - KNOWN_FIELDS), origin=origin,
    )


def parse_stanzas(text: str, origin: str = "control") -> list[TestStanza]:
    """The stanzas of a ``debian/tests/control`` text."""
    return [stanza_of(fields, origin) for fields in control_paragraphs(text.splitlines())]


def why_not_runnable(stanza: TestStanza, arch: str) -> str:
    """Why cligym's runner cannot run this stanza's tests ('' when it can)."""
    if stanza.unknown_fields:
        return f"unknown field {stanza.unknown_fields[0]} (autopkgtest skips the stanza)"
    if not stanza.tests and not stanza.test_command:
        return "neither Tests nor Test-Command (autopkgtest refuses the stanza)"
    if stanza.tests and stanza.test_command:
        return "both Tests and Test-Command (autopkgtest refuses the stanza)"
    for restriction in stanza.restrictions:
        if restriction in CANNOT_RUN:
            return f"{restriction}: {CANNOT_RUN[restriction]}"
        if restriction not in HONOURED:
            return f"unknown restriction {restriction} (autopkgtest skips the test)"
    if not arch_applies(stanza.architecture, arch):
        return f"not for {arch} (Architecture: {' '.join(stanza.architecture)})"
    return ""


def _test_name(stanza: TestStanza, counter: int) -> str:
    named = [f.split("=", 1)[1] for f in stanza.features if f.startswith("test-name=")]
    return named[0] if named else f"command{counter}"


def named_tests(stanzas: list[TestStanza]) -> Iterator[tuple[str, TestStanza]]:
    """Each test's name with its stanza, as autopkgtest names them: a Test-Command stanza's
    test is its ``test-name`` feature, else ``commandN`` (N counting such stanzas)."""
    counter = 0
    for stanza in stanzas:
        if stanza.test_command:
            counter += not any(f.startswith("test-name=") for f in stanza.features)
            yield _test_name(stanza, counter), stanza
        else:
            yield from ((name, stanza) for name in stanza.tests)


def tests_of_stanzas(stanzas: list[TestStanza], tree: Path, control: SourceControl,
                     arch: str = "amd64") -> list[AutopkgTest]:
    tests: list[AutopkgTest] = []
    for name, stanza in named_tests(stanzas):
        why = why_not_runnable(stanza, arch)
        try:
            depends = expand_depends(stanza.depends, control, arch)
        except RelationError as e:
            depends, why = [], why or f"invalid Depends: {e}"
        common = dict(restrictions=stanza.restrictions, features=stanza.features, classes=stanza.classes,
                      architecture=stanza.architecture, depends=depends, origin=stanza.origin,
                      runnable=not why, why_not=why, superficial="superficial" in stanza.restrictions,
                      flaky="flaky" in stanza.restrictions)
        if stanza.test_command:
            runner = inner_runner(stanza.test_command, tree)
            tests.append(AutopkgTest(name=name, command=stanza.test_command, runner=runner,
                                     verbose_env=verbose_env(runner), **common))  # type: ignore[arg-type]
            continue
        path = f"{stanza.tests_directory.rstrip('/')}/{name}"
        script = _script_text(tree / path)
        runner = inner_runner(path, tree, script)
        tests.append(AutopkgTest(name=name, path=path, runner=runner, verbose_env=verbose_env(runner),
                                 **common))  # type: ignore[arg-type]
    return tests


def _script_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:100_000]
    except OSError:
        return ""


def read_tests(tree: Path, arch: str = "amd64") -> DebianTests:
    """Every test of the source tree at ``tree``: ``debian/tests/control``'s, then those
    autodep8 generates for the team ``Testsuite`` names (only those when the file is absent)."""
    control = SourceControl(_script_text(tree / "debian" / "control"))
    stanzas = []
    written = tree / "debian" / "tests" / "control"
    if written.is_file():
        stanzas = parse_stanzas(_script_text(written))
    stanzas += autodep8.generated(tree, control)
    return DebianTests(source=control.name, team=autodep8.team_of(control), binaries=control.binaries(arch),
                       tests=tests_of_stanzas(stanzas, tree, control, arch))


# -- the tests list the runner reads -------------------------------------------------------

#: First line of the tests list; then one runnable test a line, tab-separated:
#: name, restrictions (comma-separated, ``-`` for none), inner runner, verbose settings
#: (space-separated, ``-`` for none), kind (``path`` or ``command``), then the script's
#: path relative to the source tree or the command (the rest of the line, tabs included).
TSV_HEADER = "# cligym debian tests v1: name restrictions runner verbose kind path-or-command"


def tests_tsv(tests: DebianTests) -> str:
    """The tests list (``/opt/cligym/debian/tests.tsv`` in a gold image) of the runnable
    tests. A command is one line already (continuation lines are joined when read); a
    newline left in one is refused."""
    lines = [TSV_HEADER]
    for test in tests.runnable():
        target = test.path or test.command
        if "\n" in target or "\t" in test.name or not test.name:
            raise ValueError(f"test {test.name!r} cannot be written on one line of the tests list")
        lines.append("\t".join([test.name, ",".join(test.restrictions) or "-", test.runner,
                                " ".join(test.verbose_env) or "-", "path" if test.path else "command", target]))
    return "\n".join(lines) + "\n"


def write_tests_tsv(tests: DebianTests, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tests_tsv(tests), encoding="utf-8")
