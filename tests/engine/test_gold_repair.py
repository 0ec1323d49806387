"""Gold for projects that do not say everything their tests need: the repair rounds add
what the failed first run asks for (a module, a plugin for an option, a plugin for a
fixture), on a real engine with real downloads; and the causes that used to fail gold,
on real sdists (read, never run on the host)."""

from __future__ import annotations

import textwrap

import pytest

from cligym.gold import make_gold
from cligym.gold.metadata import SourceTree
from cligym.gold.profiles import load_profile
from cligym.gold.requirements import find_test_requirements
from cligym.gold.source import default_test_paths, extract_sdist, fetch_sdist, has_tests
from cligym.layout import GoldDir


def _repairme(root):
    """A setup.py-only project (its name and version only in setup.py) whose tests import
    yaml and use pytest-mock's ``mocker``, and whose pytest.ini asks for pytest-timeout's
    option and colour: none of it declared anywhere."""
    (root / "tests").mkdir(parents=True)
    (root / "setup.py").write_text(textwrap.dedent("""\
        from setuptools import setup
        setup(name="repairme", version="0.3", py_modules=["repairme"], tests_require=["pytest"])
        """))
    (root / "repairme.py").write_text("def load(text):\n    import yaml\n    return yaml.safe_load(text)\n")
    (root / "pytest.ini").write_text("[pytest]\naddopts = --timeout=120 --color=yes\n")
    (root / "tests" / "test_repairme.py").write_text(textwrap.dedent("""\
        import yaml

        import repairme


        def test_load():
            assert repairme.load("a: 1") == {"a": 1} == yaml.safe_load("a: 1")


        def test_mocked(mocker):
            mocker.patch("repairme.load", return_value=2)
            assert repairme.load("x") == 2
        """))
    return root


def test_the_repair_rounds_add_what_the_suite_asks_for(tmp_path, runtime, base_image):
    out = tmp_path / "gold"
    gold = make_gold(str(_repairme(tmp_path / "repairme")), out, runtime=runtime)
    try:
        assert (gold.source.name, gold.source.version) == ("repairme", "0.3")
        assert gold.requirements_from == ["setup.py tests_require"]
        # the usage error hid the import errors: a second round found them
        assert set(gold.inferred) == {"pytest-timeout", "PyYAML", "pytest-mock"}
        assert gold.inferred["pytest-timeout"] == "pytest did not know the option --timeout"
        assert gold.inferred["PyYAML"] == "No module named 'yaml'"
        assert sorted(gold.tests) == ["tests/test_repairme.py::test_load", "tests/test_repairme.py::test_mocked"]
        # what was inferred can become a profile, and the profile loads
        written = tmp_path / "repairme.toml"
        from cligym.gold.profiles import profile_text

        written.write_text(profile_text(gold.source.name, gold.source.version, gold.requirements,
                                        gold.requirements_from, gold.inferred))
        assert set(gold.inferred) <= set(load_profile("repairme", written).requirements)
        assert GoldDir(out).gold.is_file()
    finally:
        runtime.remove_image(gold.image)


@pytest.mark.slow  # two more real sdists; the repair rounds run by default
def test_a_real_setup_py_only_checkout_with_tests_in_tests_py(tmp_path, runtime, base_image):
    """texttable as a checkout would have it (its sdist without PKG-INFO): name and version
    only in setup.py's literals, the tests in tests.py, which pytest's default patterns miss."""
    project = extract_sdist(fetch_sdist("texttable", "1.7.2"), tmp_path / "texttable")
    (project / "PKG-INFO").unlink()
    gold = make_gold(str(project), tmp_path / "gold", runtime=runtime)
    try:
        assert gold.source.kind == "local"
        assert (gold.source.name, gold.source.version) == ("texttable", "1.7.2")
        assert len(gold.tests) >= 20 and all(t.startswith("tests.py::") for t in gold.tests)
    finally:
        runtime.remove_image(gold.image)


def test_filterwarnings_error_under_the_newest_pytest_gets_the_pytest_of_its_era(tmp_path, runtime, base_image):
    """click 8.1.3 turns warnings into errors (setup.cfg ``filterwarnings = error``) and
    passes an iterator to parametrize, which pytest 9 deprecates: under the newest pytest
    its collection aborts. Its own pinned requirements/tests.txt is what gold reads; a
    profile asking for plain ``pytest`` makes the first run fail, and the repair round pins
    the pytest that was current when click 8.1.3 came out."""
    tree = extract_sdist(fetch_sdist("click", "8.1.3"), tmp_path / "click")
    assert "error" in (tree / "setup.cfg").read_text().split("filterwarnings", 1)[1].split("\n")[1]
    assert "pytest==7.1.2" in find_test_requirements(SourceTree(tree), "click")[0]  # the pin, not tests.in's newest
    profile = tmp_path / "click.toml"
    profile.write_text('requirements = ["pytest"]\n')
    gold = make_gold("click==8.1.3", tmp_path / "gold", runtime=runtime, profile_path=profile, runs=1)
    try:
        assert list(gold.inferred) == ["pytest==7.1.2"]
        assert "filterwarnings" in gold.inferred["pytest==7.1.2"]
        assert len(gold.tests) >= 20
    finally:
        runtime.remove_image(gold.image)


@pytest.mark.slow
def test_a_real_suite_that_forces_colour_leaves_no_ansi_in_what_gold_records(tmp_path, runtime, base_image):
    """humanize 4.14.0 runs pytest with ``addopts = "--color=yes"``: asked for plain pytest
    only, its first run fails to import freezegun in colour; what the repair round records
    and the left-out reasons carry pytest's words without escape codes."""
    tree = extract_sdist(fetch_sdist("humanize", "4.14.0"), tmp_path / "humanize")
    assert 'addopts = "--color=yes"' in (tree / "pyproject.toml").read_text()
    profile = tmp_path / "humanize.toml"
    profile.write_text('requirements = ["pytest"]\n')
    gold = make_gold("humanize==4.14.0", tmp_path / "gold", runtime=runtime, profile_path=profile, runs=1)
    try:
        # the modules that failed to import made no failing test id: the exit code told
        assert gold.inferred.get("freezegun") == "No module named 'freezegun'"
        assert any(t.startswith("tests/test_time.py::") for t in gold.tests)
        assert not any("\x1b" in text for text in [*gold.inferred.values(), *gold.left_out.values()])
        assert len(gold.tests) >= 20
    finally:
        runtime.remove_image(gold.image)


def test_causes_that_used_to_stop_gold_on_real_sdists(tmp_path):
    # munch declares its "testing" extra in pbr's setup.cfg [extras] section
    tree = extract_sdist(fetch_sdist("munch", "4.0.0"), tmp_path / "munch")
    reqs, sources = find_test_requirements(SourceTree(tree), "munch")
    assert "extra 'testing'" in sources and "pytest" in reqs
    # decorator keeps its tests in tests/test.py, texttable in tests.py: pytest collects
    # them when they are named
    decorator = extract_sdist(fetch_sdist("decorator", "5.3.1"), tmp_path / "decorator")
    assert has_tests(decorator) and default_test_paths(decorator) == ["tests/test.py"]
    texttable = extract_sdist(fetch_sdist("texttable", "1.7.2"), tmp_path / "texttable")
    assert has_tests(texttable) and default_test_paths(texttable) == ["tests.py"]
    markupsafe = extract_sdist(fetch_sdist("markupsafe", "3.0.2"), tmp_path / "markupsafe")
    assert default_test_paths(markupsafe) == []  # test_*.py files: pytest's own collection


@pytest.mark.slow  # a long case
def test_a_repair_that_does_not_install_keeps_the_build_before(tmp_path, runtime, base_image, monkeypatch):
    """The errors ask for a distribution that cannot be installed: gold is made from the
    build before the repair round, with nothing recorded as inferred."""
    from cligym.gold import stage
    from tests.engine.test_gold_errors import make_project

    project = make_project(tmp_path / "p", "cligym-sample-norepair",
                           "def test_ok():\n    assert True\n\ndef test_bad():\n    assert False")
    monkeypatch.setattr(stage, "repairs", lambda *a: {"cligym-no-such-dependency-51ab==2.0": "asked for"})
    gold = make_gold(str(project), tmp_path / "gold", runtime=runtime, runs=1)
    try:
        assert gold.inferred == {} and gold.tests == ["tests/test_sample.py::test_ok"]
        assert "cligym-no-such-dependency-51ab==2.0" not in gold.requirements
    finally:
        runtime.remove_image(gold.image)
