"""Profiles and test requirements read from project metadata."""

from __future__ import annotations

from importlib import resources

import pytest

from cligym.errors import BadInput
from cligym.gold.metadata import SourceTree
from cligym.gold.profiles import Profile, load_profile
from cligym.gold.requirements import find_test_requirements
from cligym.gold.source import parse_spec


def test_requirements_from_extras_groups_and_self_reference(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        """
[project]
name = "demo-pkg"
version = "1.0"
[project.optional-dependencies]
tests = ["pytest>=7", "demo-pkg[yaml]"]
yaml = ["pyyaml"]
[dependency-groups]
test = ["coverage", {include-group = "lint"}]
lint = ["ruff"]
"""
    )
    assert find_test_requirements(SourceTree(tmp_path), "demo_pkg")[0] == ["pytest>=7", "pyyaml", "coverage", "ruff"]


def test_requirements_from_setup_cfg_and_requirement_files(tmp_path):
    (tmp_path / "setup.cfg").write_text("[options.extras_require]\ntesting =\n    mock\n    pytest\n")
    assert find_test_requirements(SourceTree(tmp_path), "x")[0] == ["mock", "pytest"]
    other = tmp_path / "other"
    (other / "requirements").mkdir(parents=True)
    (other / "requirements" / "tests.in").write_text("# tests\npytest\n-r base.in\nhypothesis  # fuzz\n")
    assert find_test_requirements(SourceTree(other), "x")[0] == ["pytest", "hypothesis"]


def test_profile_ignores_fold_into_command():
    profile = Profile(ignore=["tests/test_net.py", "tests/test_a.py::test_b[1 2]"])
    cmd = profile.full_test_command()
    assert "--ignore=tests/test_net.py" in cmd
    assert "--deselect='tests/test_a.py::test_b[1 2]'" in cmd


def test_shipped_profiles_cover_the_design_list():
    folder = resources.files("cligym.gold") / "profiles"
    names = {p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")}
    assert {"markupsafe", "python-dotenv", "h11", "exceptiongroup", "apispec", "environs"} <= names
    for name in names:
        load_profile(name)  # every shipped profile validates


def test_bad_profile_and_spec(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text("test_cmd = 'typo'\n")
    with pytest.raises(BadInput):
        load_profile("x", bad)
    with pytest.raises(BadInput):
        parse_spec("foo>=1")
    assert parse_spec("Foo==1.2") == ("Foo", "1.2")
    assert parse_spec("foo") == ("foo", None)
