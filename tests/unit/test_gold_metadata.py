"""The one reader of a project's source tree and its error policy: a file that is absent or
silent says nothing; one that is present but does not parse is bad input, said in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cligym.errors import BadInput
from cligym.gold import index
from cligym.gold.metadata import SourceTree
from cligym.gold.requirements import find_test_requirements


def _tree(root, files: dict[str, str | bytes]) -> SourceTree:
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (root / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return SourceTree(root)


def _bad_input(call, *said: str) -> str:
    with pytest.raises(BadInput) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message and all(s in message for s in said), message
    return message


@pytest.mark.parametrize("content", ["[project\nname = 'demo'\n", "[project]\nname = 'd\xe9mo'\n".encode("latin-1")])
def test_a_pyproject_that_does_not_parse_is_bad_input_everywhere_it_is_read(tmp_path, content):
    tree = _tree(tmp_path, {"pyproject.toml": content, "setup.cfg": "[metadata]\nname = demo\n"})
    for call in (tree.name_version, tree.build_requirements, lambda: tree.extras,
                 lambda: find_test_requirements(tree, "demo")):
        _bad_input(call, "pyproject.toml of the project does not parse")


def test_a_pyproject_table_of_the_wrong_kind_says_nothing(tmp_path):
    tree = _tree(tmp_path, {"pyproject.toml": "project = 'demo'\nbuild-system = ['x']\n"})
    assert tree.name_version() == (tmp_path.resolve().name, "0")
    assert tree.build_requirements() == ["setuptools>=40.8.0", "wheel"]
    assert tree.extras == {}


def test_missing_pkg_info_fields_say_nothing(tmp_path):
    info = "Metadata-Version: 2.1\nProvides-Extra: test\nRequires-Dist: pytest; extra == 'test'\n"
    tree = _tree(tmp_path, {"PKG-INFO": info})
    assert tree.name_version() == (tmp_path.resolve().name, "0")  # no Name: the directory names it
    assert tree.extras == {"test": ["pytest"]}
    named = _tree(tmp_path / "named", {"PKG-INFO": b"Metadata-Version: 2.1\nName: demo\nAuthor: J\xe9r\xf4me\n"})
    assert named.name_version() == ("demo", "0")  # no Version; bytes that are not UTF-8 fail nothing
    assert named.extras == {}


def test_setup_cfg_is_read_without_interpolation(tmp_path):
    tree = _tree(tmp_path, {"setup.cfg": ("[metadata]\nname = demo%%\nversion = %(release)s\n"
                                          "[options.extras_require]\ntest =\n    pytest>=7  # 100% needed\n"
                                          "[metadata]\nversion = 1.0%\n")})
    assert tree.name_version() == ("demo%%", "1.0%")  # as written; a repeated section merges
    assert tree.extras == {"test": ["pytest>=7"]}


@pytest.mark.parametrize("name", ["setup.cfg", "tox.ini"])
def test_an_ini_file_that_does_not_parse_is_bad_input_in_one_line(tmp_path, name):
    tree = _tree(tmp_path, {name: "[testenv]\ndeps = pytest\n  \nnot an option\n"})
    message = _bad_input(lambda: find_test_requirements(tree, "demo"), f"{name} of the project does not parse", "line")
    assert "not an option" in message
    headless = _tree(tmp_path / "headless", {name: "deps = pytest\n"})
    _bad_input(lambda: find_test_requirements(headless, "demo"), "no section headers")


def test_legacy_tox_ini_in_pyproject_is_read_by_the_same_rules(tmp_path):
    legacy = '[tool.tox]\nlegacy_tox_ini = """\n[testenv]\ndeps = pytest%s\n"""\n'
    assert find_test_requirements(_tree(tmp_path, {"pyproject.toml": legacy % ">=7"}), "demo") == (
        ["pytest>=7"], ["pyproject legacy_tox_ini [testenv]"])
    broken = _tree(tmp_path / "broken", {"pyproject.toml": legacy % "\nno option here"})
    _bad_input(lambda: find_test_requirements(broken, "demo"), "legacy_tox_ini", "does not parse")


def test_setup_py_that_does_not_parse_says_nothing(tmp_path):
    tree = _tree(tmp_path, {"setup.py": "print 'python 2'\nsetup(name='demo')\n"})
    assert tree.setup_literals == {} and tree.name_version() == (tmp_path.resolve().name, "0")


def test_the_default_index_is_pips_own_when_none_is_configured(monkeypatch):
    said = {"config list": ""}
    monkeypatch.setattr(index, "_pip_output", lambda *args: said[" ".join(args)])
    index.pip_settings.cache_clear()
    own = subprocess.run([sys.executable, "-m", "pip", "download", "--help"], capture_output=True, text=True).stdout
    try:
        default = index.pip_settings().indexes[0]
        assert default.startswith("https://") and f"(default {default})" in " ".join(own.split())  # pip's own
        assert index.pip_settings().indexes == (default,)
        said["config list"] = ":env:.extra-index-url='https://a.example/simple https://b.example/simple'\n"
        index.pip_settings.cache_clear()
        assert index.pip_settings().indexes == (default, "https://a.example/simple",
                                                "https://b.example/simple")
        said["config list"] = "global.no-index='true'\nglobal.index-url='https://c.example/simple'\n"
        index.pip_settings.cache_clear()
        assert index.pip_settings().indexes == ()
    finally:
        index.pip_settings.cache_clear()
