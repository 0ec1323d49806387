"""Test requirements found wherever projects declare them, and what a failed first suite
run asks for: on small trees written here, then on real sdists (downloaded and read,
never run)."""

from __future__ import annotations

import tarfile
from datetime import datetime

import pytest
from packaging.version import Version

from cligym.gold.diagnose import (
    collection_errors,
    decisive_lines,
    of_era,
    repairs,
    why_left_out,
)
from cligym.gold.imports import distribution_for, imported_distributions
from cligym.gold.metadata import SourceTree
from cligym.gold.requirements import find_test_requirements, merge
from cligym.gold.source import extract_sdist, fetch_sdist
from cligym.models.testrun import TestResult, TestRun


def _write(root, files: dict[str, str]):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


PKG_INFO = """Metadata-Version: 2.1
Name: demo
Version: 1.0
Provides-Extra: testing
Requires-Dist: six
Requires-Dist: pytest>=6; extra == "testing"
Requires-Dist: mock; python_version < "3.3" and extra == "testing"
Requires-Dist: sphinx; extra == "docs"
"""

def test_extras_that_only_pkg_info_declares_are_read(tmp_path):
    _write(tmp_path, {"PKG-INFO": PKG_INFO, "setup.py": "from setuptools import setup\nsetup(**config())\n"})
    assert SourceTree(tmp_path).extras["testing"] == ["pytest>=6"]  # mock's marker is false here
    reqs, sources = find_test_requirements(SourceTree(tmp_path), "demo")
    assert reqs == ["pytest>=6"] and sources == ["extra 'testing'"]


def test_extras_only_the_sdists_egg_info_lists_are_read(tmp_path):
    """setup.py computes its extras; setuptools wrote them into the sdist's requires.txt."""
    tree = _write(tmp_path / "demo-1.0", {"setup.py": "from setuptools import setup\nsetup(**config())\n",
                                          "demo.egg-info/requires.txt": ("six\n[test]\npytest\n"
                                                                         "[test:sys_platform == 'linux']\nuvloop\n")})
    archive = tmp_path / "demo-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(tree, arcname="demo-1.0")
    reqs, sources = find_test_requirements(SourceTree(tree, archive), "demo")
    assert reqs == ["pytest", "uvloop; sys_platform == 'linux'"] and sources == ["extra 'test'"]
    assert find_test_requirements(SourceTree(tree), "demo")[0] == []  # the unpacked tree alone does not say


def test_literal_setup_py_extras_and_tests_require_are_read(tmp_path):
    _write(tmp_path, {"setup.py": (
        "from setuptools import setup\nEXTRAS = {'test': ['pytest', 'hypothesis>=6']}\n"
        "setup(name='demo', version='2.1', extras_require=EXTRAS, tests_require=['mock'])\n")})
    assert SourceTree(tmp_path).setup_literals["version"] == "2.1"
    reqs, sources = find_test_requirements(SourceTree(tmp_path), "demo")
    assert reqs == ["pytest", "hypothesis>=6", "mock"]
    assert sources == ["extra 'test'", "setup.py tests_require"]


def test_tox_deps_with_files_extras_and_factors(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": "[project]\nname='demo'\nversion='1'\n[project.optional-dependencies]\nyaml=['pyyaml']\n",
        "tox.ini": ("[tox]\nenvlist = py311\n[testenv]\nextras = yaml\ndeps =\n    pytest>=7,<9\n"
                    "    py27: mock\n    -rrequirements/extra.txt\n    {[base]deps}\ncommands = pytest\n"),
        "requirements/extra.txt": "# for the tests\nfreezegun==1.4.0 \\\n    --hash=sha256:abc\n-c constraints.txt\n",
    })
    reqs, sources = find_test_requirements(SourceTree(tmp_path), "demo")
    assert reqs == ["pytest>=7,<9", "freezegun==1.4.0", "pyyaml"] and sources == ["tox.ini [testenv]"]


def test_a_pinned_requirements_file_wins_over_the_file_it_was_compiled_from(tmp_path):
    _write(tmp_path, {"requirements/tests.in": "pytest\n", "requirements/tests.txt": "pytest==8.1.1\npluggy==1.4.0\n",
                      "pyproject.toml": "[dependency-groups]\ntests = ['pytest>=7']\n"})
    reqs, sources = find_test_requirements(SourceTree(tmp_path), "demo")
    assert reqs == ["pytest==8.1.1", "pluggy==1.4.0"]  # the project's pin beats the looser group entry
    assert sources == ["dependency group 'tests'", "requirements/tests.txt"]
    assert merge(["a>=1", "a", "a==2", "b; python_version<'3'"]) == ["a==2", "b; python_version<'3'"]


def test_noxfile_hatch_and_poetry(tmp_path):
    _write(tmp_path, {
        "noxfile.py": ("import nox\n@nox.session\ndef tests(session):\n"
                       "    session.install('-r', 'req-test.txt', 'pytest-cov')\n    session.install('.[fast]')\n"
                       "@nox.session\ndef docs(session):\n    session.install('sphinx')\n"),
        "req-test.txt": "pytest\n",
        "pyproject.toml": ("[project]\nname='demo'\n[project.optional-dependencies]\nfast=['ujson']\n"
                           "[tool.hatch.envs.test]\ndependencies=['coverage']\n"
                           "[tool.poetry.group.test.dependencies]\npython='^3.9'\nrequests='^2.0'\nidna='3.4'\n"),
    })
    reqs, sources = find_test_requirements(SourceTree(tmp_path), "demo")
    assert reqs == ["coverage", "requests", "idna==3.4", "pytest", "pytest-cov", "ujson"]
    assert sources == ["hatch env 'test'", "poetry group 'test'", "noxfile.py"]


def test_imports_of_the_test_files_are_the_last_resort(tmp_path):
    _write(tmp_path, {"demo/__init__.py": "", "tests/helpers.py": "",
                      "tests/test_a.py": ("import os\nimport yaml\nimport demo\nfrom tests import helpers\n"
                                          "from dateutil import tz\ntry:\n    import numpy\n"
                                          "except ImportError:\n    pass\n")})
    assert imported_distributions(tmp_path, "demo") == ["PyYAML", "python-dateutil"]
    reqs, sources = find_test_requirements(SourceTree(tmp_path), "demo")
    assert reqs == ["PyYAML", "python-dateutil"] and sources == ["imports of the test files"]
    assert distribution_for("json") is None and distribution_for("google.protobuf.message") == "protobuf"


def _run(output: str = "", **messages: tuple[str, str]) -> TestRun:
    return TestRun(exit_code=1, seconds=1.0, report_found=True, output_tail=output,
                   results={k: TestResult(outcome=o, message=m) for k, (o, m) in messages.items()})


def test_a_failed_first_run_names_what_to_add():
    run = _run("\x1b[31mERROR: usage: pytest [options]\npytest: error: unrecognized arguments: --cov=demo -n 4\x1b[0m\n"
               "SKIPPED [2] tests/test_np.py:3: could not import 'numpy': No module named 'numpy'",
               a=("error", "E   ModuleNotFoundError: No module named 'yaml.constructor'"),
               b=("error", "ImportError while importing test module: No module named 'helpers'"),
               c=("error", "E   ModuleNotFoundError: No module named 'demo._speedups'"),
               d=("skipped", "could not import 'numpy': No module named 'numpy'"),
               e=("error", "fixture 'mocker' not found"))
    found = repairs(run, "demo", {"helpers", "demo"}, ["pytest"])
    assert list(found) == ["PyYAML", "pytest-cov", "pytest-xdist", "pytest-mock"]
    assert found["pytest-cov"] == "pytest did not know the option --cov"
    assert repairs(run, "demo", {"helpers", "demo"}, ["pytest", "pyyaml", "pytest-cov", "pytest-xdist",
                                                     "pytest-mock"]) == {}


def test_a_pytest_deprecation_raised_as_an_error_pins_an_older_pytest():
    run = _run("warnings summary\n", a=("error", "E   pytest.PytestRemovedIn9Warning: Marks applied to fixtures"))
    assert repairs(run, "demo", set(), ["pytest>=8"]) == {
        "pytest<9": "a pytest deprecation raised as an error (the project's filterwarnings)"}
    only_warned = _run("tests/x.py: PytestRemovedIn9Warning: marks on fixtures\n", a=("failed", "assert 1 == 2"))
    assert repairs(only_warned, "demo", set(), ["pytest"]) == {}


def test_the_pytest_of_a_projects_era():
    day = lambda text: datetime.fromisoformat(text + "T00:00:00+00:00")  # noqa: E731
    times = {Version("6.2.5"): day("2021-08-29"), Version("7.4.4"): day("2023-12-31"),
             Version("8.0.0rc1"): day("2024-01-05"), Version("8.0.0"): day("2024-01-27"),
             Version("9.0.0"): day("2025-11-01")}
    assert of_era("pytest", day("2024-01-10"), times, 999) == "pytest==7.4.4"  # a release candidate is not taken
    assert of_era("pytest", day("2025-12-01"), times, 9) == "pytest==8.0.0"  # before the major that removes it
    assert of_era("pytest", day("2021-09-01"), times, 999) is None  # older than any pytest that runs on 3.11
    assert of_era("pytest", None, times, 999) is None
    assert of_era("markupsafe", day("2021-09-01"), times, 999) == "markupsafe==6.2.5"  # no floor for others


def test_a_dependency_newer_than_the_suite_is_pinned_to_its_era():
    run = _run("", a=("error", "E   AttributeError: module '_pytest.monkeypatch' has no attribute 'notset'"),
               b=("failed", "ImportError: cannot import name 'soft_unicode' from 'markupsafe' (/opt/venv/x.py)"),
               c=("failed", "AttributeError: module 'demo.core' has no attribute 'gone'"),
               d=("failed", "AttributeError: module 'json' has no attribute 'x'"))
    found = repairs(run, "demo", {"demo"}, ["pytest", "jinja2"])
    assert list(found) == ["pytest<999", "markupsafe<999"]  # not the project's own, not the stdlib


def test_errors_keep_their_decisive_lines_without_colour():
    output = ("\x1b[1m============ test session starts ============\x1b[0m\nplatform linux\ncollected 0 items\n"
              "\x1b[31mE   ModuleNotFoundError: No module named 'yaml'\x1b[0m\n"
              "ERROR tests/test_a.py\n!!!! Interrupted: 1 error during collection !!!!\n===== 1 error in 0.1s =====\n")
    said = decisive_lines(output)
    assert "\x1b" not in said and said.startswith("E   ModuleNotFoundError: No module named 'yaml'")
    assert "Interrupted: 1 error during collection" in said
    assert why_left_out("Skipped: could not import 'numpy'") == "missing optional dependency numpy"
    assert why_left_out("FileNotFoundError: [Errno 2] No such file or directory: 'tests/data/x.bin'") == \
        "missing file tests/data/x.bin"


def test_modules_that_failed_to_import_are_named_with_their_reason():
    output = ("\x1b[31m\x1b[1m_____________ ERROR collecting tests/test_time.py _____________\x1b[0m\n"
              "ImportError while importing test module '/testbed/tests/test_time.py'.\n"
              "tests/test_time.py:9: in <module>\n    from freezegun import freeze_time\n"
              "\x1b[1m\x1b[31mE   ModuleNotFoundError: No module named 'freezegun'\x1b[0m\n"
              "_____________ ERROR collecting tests/test_data.py _____________\n"
              "E   FileNotFoundError: [Errno 2] No such file or directory: 'tests/data/x.bin'\n"
              "=========== short test summary info ===========\nERROR tests/test_time.py\n")
    assert collection_errors(output) == {"tests/test_time.py": "missing optional dependency freezegun",
                                         "tests/test_data.py": "missing file tests/data/x.bin"}
    assert collection_errors("==== 3 passed in 0.1s ====\n") == {}


# ---- real sdists (downloaded, read, never run) ------------------------------------------


@pytest.mark.parametrize("spec, expected, source", [
    # python-dotenv names its CLI and subprocess test deps only in tox.ini
    ("python-dotenv==1.2.1", {"click", "sh >= 2.0.2, <3"}, "tox.ini [testenv]"),
    # markupsafe keeps requirements/tests.in and the pinned tests.txt compiled from it
    ("markupsafe==3.0.2", {"pytest==8.3.3"}, "requirements/tests.txt"),
])
def test_real_sdists(tmp_path, spec, expected, source):
    name, version = spec.split("==")
    tree = extract_sdist(fetch_sdist(name, version), tmp_path / "tree")
    reqs, sources = find_test_requirements(SourceTree(tree), name)
    assert expected <= set(reqs) and source in sources


def test_extras_that_only_a_real_sdists_metadata_declares(tmp_path):
    # psutil computes extras_require in setup.py: only the PKG-INFO setuptools wrote names them
    psutil = extract_sdist(fetch_sdist("psutil", "7.1.0"), tmp_path / "psutil")
    assert not SourceTree(psutil).setup_literals.get("extras_require")
    assert "optional-dependencies" not in (psutil / "pyproject.toml").read_text()
    reqs, sources = find_test_requirements(SourceTree(psutil), "psutil")
    assert {"pytest", "pytest-xdist"} <= set(reqs) and sources == ["extra 'test'"]
    # attrs 21.4.0 builds "tests" from other extras in setup.py, and the setuptools of its
    # day wrote the requirements only into egg-info's requires.txt inside the archive
    archive = fetch_sdist("attrs", "21.4.0")
    attrs = extract_sdist(archive, tmp_path / "attrs")
    assert "tests" not in (SourceTree(attrs).setup_literals.get("extras_require") or {})
    reqs, sources = find_test_requirements(SourceTree(attrs, archive), "attrs")
    assert "extra 'tests'" in sources and {"zope.interface", "hypothesis"} <= set(reqs)
    assert "extra 'tests'" not in find_test_requirements(SourceTree(attrs), "attrs")[1]  # the tree alone does not say
