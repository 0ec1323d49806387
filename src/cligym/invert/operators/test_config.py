"""Operators: test_configuration (pytest configuration files that change how tests run).

Named-only: an exported task's verifier restores gold's conftest and pytest configuration
files and deletes new ones before it runs the tests, so these would score with nothing done."""

from __future__ import annotations

import posixpath
import re

from cligym.invert.operators.base import Operator, register
from cligym.invert.operators.probing import project_root
from cligym.invert.operators.targets import TargetData, pycache_glob, q, write_file_line

CATEGORY = "test_configuration"

#: Markers pytest registers itself; --strict-markers never rejects them.
BUILTIN_MARKERS = frozenset({
    "parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings", "tryfirst", "trylast",
})

CHDIR_CONFTEST = b'''import os

import pytest


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path):
    """Run every test in a scratch directory so that nothing lands in the checkout."""
    previous = os.getcwd()
    os.chdir(tmp_path)
    yield
    os.chdir(previous)
'''


def new_pytest_ini(probe) -> str | None:
    """Where a new pytest.ini would take over the project's configuration, if it can."""
    root = project_root(probe)
    path = f"{root}/pytest.ini"
    if path in probe.files or (probe.inifile or "").endswith("/pytest.ini"):
        return None
    if probe.inifile and posixpath.dirname(probe.inifile) != root:
        return None
    return path


class _PytestIni(Operator):
    CONTENT = b""
    default = False
    offline = "Delete the pytest.ini that took over the project's pytest configuration."

    def apply(self, target):
        return [f"RUN {write_file_line(target.path, self.CONTENT)}"]

    def solution(self, target):
        return [f"rm -f {q(target.path)}"]


@register
class PytestIniWarningsError(_PytestIni):
    """A stricter pytest.ini dropped into the checkout (from a CI template) that turns every
    warning into an error."""

    name = "pytest_ini_warnings_error"
    symptom = "Tests that used to pass now fail with a warning (such as a DeprecationWarning) raised as an error."
    hint = "Which pytest configuration file is in effect, and how it treats warnings."
    shows = (r"Warning\b",)
    CONTENT = b"[pytest]\nfilterwarnings =\n    error\n"

    def applies_to(self, probe, tests):
        path = new_pytest_ini(probe)
        touching = [t for t in tests if probe.of(t).warnings]
        return [self.target(path=path, name="pytest.ini", touching=touching)] if path and touching else []


class MarkersData(TargetData):
    markers: list[str]  # the custom markers the tests use (then: those the inifile registers)
    inifile: str


@register
class PytestIniStrictMarkers(_PytestIni):
    """A pytest.ini from a CI template, with ``--strict-markers``, that takes precedence over
    the project's own configuration, where its markers are registered."""

    name = "pytest_ini_strict_markers"
    symptom = "Test modules error out during collection, complaining about a marker that is not registered."
    hint = "Which pytest configuration file is in effect, and where test markers are declared."
    shows = (r"not found in `markers` configuration", r"marker")
    CONTENT = b"[pytest]\naddopts = --strict-markers\n"
    Data = MarkersData

    def applies_to(self, probe, tests):
        path = new_pytest_ini(probe)
        custom = {t: set(probe.of(t).markers) - BUILTIN_MARKERS for t in tests}
        touching = [t for t in tests if custom[t]]
        if not path or not touching or not probe.inifile:
            return []
        markers = sorted(set().union(*custom.values()))
        return [self.target(path=path, name="pytest.ini", touching=touching, markers=markers, inifile=probe.inifile)]

    def prepare(self, target, gold):
        text = (gold.read(target.data.inifile) or b"").decode("utf-8", "replace")
        declared = text.split("markers", 1)[1] if "markers" in text else ""
        registered = [m for m in target.data.markers if re.search(rf"[\s\"']{re.escape(m)}\b", declared)]
        if not registered:
            return None  # registered elsewhere (a plugin or a conftest): the new file would not drop them
        return target.with_data(markers=registered)


@register
class ConftestAutouseChdir(Operator):
    """A conftest.py added for test isolation whose autouse fixture runs every test in a
    scratch directory, so relative paths no longer reach the checkout."""

    name = "conftest_autouse_chdir"
    symptom = "Some tests fail to find files or directories they expect relative to the project checkout."
    hint = "Fixtures that apply to every test and change the process state around it."
    shows = (r"No such file or directory", r"FileNotFoundError")
    offline = "Delete the added conftest.py whose autouse fixture changes directory."
    default = False

    def applies_to(self, probe, tests):
        root = project_root(probe).rstrip("/")
        folders: dict[str, list[str]] = {}
        for test in tests:
            folder = posixpath.dirname(f"{root}/{test.split('::')[0]}")
            while folder.startswith(root):
                folders.setdefault(folder, []).append(test)
                if folder == root:
                    break
                folder = posixpath.dirname(folder)
        return [
            self.target(path=f"{folder}/conftest.py", name=posixpath.relpath(folder, root), touching=touching)
            for folder, touching in sorted(folders.items(), key=lambda item: (-item[0].count("/"), item[0]))
            if f"{folder}/conftest.py" not in probe.files
        ]

    def apply(self, target):
        return [f"RUN {write_file_line(target.path, CHDIR_CONFTEST)}"]

    def solution(self, target):
        return [f"rm -f {q(target.path)} {pycache_glob(target.path)}"]
