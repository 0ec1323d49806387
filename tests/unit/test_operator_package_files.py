"""package_files' targets, chosen from probes built by hand: which submodules and data
files of installed distributions only some tests reach (the break and the repair on
real gold images are rows of ``tests/engine/operators/test_table.py``)."""

from __future__ import annotations

import re

import pytest

from cligym.invert.operators import REGISTRY
from cligym.models.fs import Entry
from cligym.models.probe import Dist, Probe, Touch

SITE = "/opt/venv/lib/python3.11/site-packages"


WHEELS = "/opt/wheelhouse"


TESTS = ["tests/test_a.py::test_plain", "tests/test_a.py::test_help", "tests/test_b.py::test_schema"]


def _file(size: int = 100) -> Entry:
    return Entry(type="f", mode="644", size=size, mtime="0")


def hand_probe(*, wheel: bool = True) -> Probe:
    """A project whose tests use ``lib`` (a dependency). Both test modules import ``lib``
    and ``lib.core`` when collected, and the second one reads ``lib/data/table.json`` then;
    while running, one test imports ``lib.wrap`` and one opens ``lib/data/schema.json``
    (and the table, and lib's metadata). The session start-up imports ``lib.boot`` and
    opens ``lib/data/boot.json``."""
    names = ("__init__.py", "core.py", "wrap.py", "boot.py", "data/schema.json", "data/boot.json",
             "data/table.json", "py.typed")
    files = {f"{SITE}/lib/{name}": _file() for name in names}
    files[f"{SITE}/lib-1.0.dist-info/METADATA"] = _file()
    if wheel:
        files[f"{WHEELS}/lib-1.0-py3-none-any.whl"] = _file()
    modules = {m: f"{SITE}/{m.replace('.', '/')}.py" for m in ("lib.core", "lib.wrap", "lib.boot")}
    modules["lib"] = f"{SITE}/lib/__init__.py"
    dist = Dist(name="lib", version="1.0", path=f"{SITE}/lib-1.0.dist-info", top_level=["lib"],
                files=[f"lib/{name}" for name in names] + ["lib-1.0.dist-info/METADATA"])
    data = f"{SITE}/lib/data"
    touch = {
        "session": Touch(modules=["lib.boot"], files=[f"{data}/boot.json"]),
        "file:tests/test_a.py": Touch(modules=["lib", "lib.core"]),
        "file:tests/test_b.py": Touch(modules=["lib", "lib.core"], files=[f"{data}/table.json"]),
        TESTS[0]: Touch(file="file:tests/test_a.py"),
        TESTS[1]: Touch(modules=["lib.wrap"], file="file:tests/test_a.py"),
        TESTS[2]: Touch(files=[f"{data}/schema.json", f"{data}/table.json", f"{SITE}/lib-1.0.dist-info/METADATA"],
                        file="file:tests/test_b.py"),
    }
    return Probe(gold_image_id="sha256:0", tests=TESTS, touch=touch, modules=modules, libs=[], dists=[dist],
                 python={"prefix": "/opt/venv", "site_packages": [SITE]}, files=files)


#: Errors the rows' broken images gave (python-dotenv, apispec), and what each operator shows.
SEEN = [
    ("package_submodule_removed", "<Result ModuleNotFoundError(\"No module named 'click._textwrap'\")>.exit_code"),
    ("package_data_removed",
     f"OSError: No such file: {SITE}/openapi_spec_validator/resources/schemas/v2.0/schema.json"),
    ("package_data_truncated", "yaml.scanner.ScannerError: while scanning a quoted scalar"),
    ("package_data_truncated", "yaml.parser.ParserError: while parsing a flow node"),
]


def test_submodule_targets_touch_only_the_tests_that_import_them():
    targets = REGISTRY["package_submodule_removed"].applies_to(hand_probe(), TESTS)
    # lib.boot is imported at start-up (breaks every test); lib.core by both test modules
    # (breaks their tests: runs go on past a module that fails to import); lib itself is
    # the top package
    assert [(t.name, t.touching) for t in targets] == [("lib.wrap", [TESTS[1]]), ("lib.core", TESTS)]
    assert targets[0].data.reinstall.endswith("--force-reinstall --no-deps 'lib==1.0'")
    assert f"--find-links {WHEELS} " in targets[0].data.reinstall


def test_data_targets_touch_only_the_tests_that_open_them():
    probe = hand_probe()
    for name in ("package_data_removed", "package_data_truncated"):
        targets = REGISTRY[name].applies_to(probe, TESTS)
        # not the start-up's file, not metadata, not code; table.json is opened when
        # test_b's module is imported, so it touches test_b's test
        assert [(t.path, t.touching) for t in targets] == [
            (f"{SITE}/lib/data/schema.json", [TESTS[2]]), (f"{SITE}/lib/data/table.json", [TESTS[2]])]
    truncated = REGISTRY["package_data_truncated"].applies_to(probe, TESTS)[0]
    assert (truncated.data.size, truncated.data.keep) == (100, 50)


def test_no_wheel_no_target():
    probe = hand_probe(wheel=False)
    for name in ("package_submodule_removed", "package_data_removed", "package_data_truncated"):
        op = REGISTRY[name]
        targets = op.applies_to(probe, TESTS)
        assert targets and all(op.prepare(t, None) is None for t in targets)
        assert all(op.prepare(t, None) is not None for t in op.applies_to(hand_probe(), TESTS))


def test_texts_name_no_path_and_no_fix():
    probe = hand_probe()
    for name in ("package_submodule_removed", "package_data_removed", "package_data_truncated"):
        op = REGISTRY[name]
        target = op.applies_to(probe, TESTS)[0]
        text = op.describe(target)
        assert "{" not in text["symptom"] + text["hint"]
        assert "/" not in text["hint"] and "pip" not in text["hint"] and "reinstall" not in text["hint"].lower()
        assert op.shows and op.offline_repair(target).startswith("Reinstall lib==1.0 ")
        assert op.solution(target) == [target.data.reinstall]


@pytest.mark.parametrize(("name", "error"), SEEN)
def test_shows_matches_the_errors_seen(name, error):
    assert any(re.search(pattern, error, re.IGNORECASE) for pattern in REGISTRY[name].shows)


def test_no_operator_targets_a_pytest_plugin():
    """The verifier pins gold's pytest plugins byte for byte and a reinstall rewrites their
    files, so a broken plugin could never be repaired to a reward (humanize lost 3 of 30
    attempts that way): once ``lib`` is a plugin, nothing of it is a target."""
    def with_subpackage() -> Probe:  # a subpackage, for init_py_removed
        probe = hand_probe()
        path = f"{SITE}/lib/sub/__init__.py"
        probe.files[path], probe.modules["lib.sub"] = _file(size=400), path
        probe.dists[0].files.append("lib/sub/__init__.py")
        probe.touch["file:tests/test_a.py"].modules.append("lib.sub")
        return probe

    probe = with_subpackage()
    names = {op.name for op in REGISTRY.values() for t in op.applies_to(probe, TESTS)
             if t.path.startswith(f"{SITE}/lib")}
    assert {"init_py_removed", "package_submodule_removed", "sourceless_pyc_stale"} <= names, names
    probe = with_subpackage()
    dist = probe.dists[0]
    dist.entry_points = [{"name": "lib", "group": "pytest11", "value": "lib.plugin"}]
    hits = [(op.name, t.path) for op in REGISTRY.values() for t in op.applies_to(probe, TESTS)
            if t.path.startswith(f"{SITE}/lib")]
    assert hits == []
