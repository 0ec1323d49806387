"""Gold environments built for real from PyPI sdists, re-checked inside their images."""

from __future__ import annotations

import json
import shutil
import tarfile

import pytest

from cligym.gold import make_gold
from cligym.gold.shards import Budget
from cligym.gold.source import fetch_sdist
from cligym.harness.testrun import run_tests
from cligym.models.gold import GoldEnv
from cligym.models.io import load

PROJECTS = ["markupsafe==3.0.2", "h11==0.16.0", "python-dotenv==1.2.1"]


def _recheck(runtime, gold: GoldEnv) -> None:
    """The recorded tests pass when run again, by node id, in the recorded image."""
    run = run_tests(runtime, gold.image, gold.workdir, gold.test_command, gold.tests, timeout=600)
    assert run.report_found, run.output_tail
    assert run.passed() == set(gold.tests), sorted(set(gold.tests) - run.passed())[:5]


@pytest.mark.parametrize("spec", PROJECTS)
def test_gold_from_pypi_sdist(spec, runtime, gold_envs):
    gold = gold_envs(spec)
    name, version = spec.split("==")
    assert gold.source.kind == "pypi" and gold.source.version == version
    assert gold.source.sdist_sha256 and len(gold.source.sdist_sha256) == 64
    assert gold.image.startswith(f"cligym/gold-{name}:{version}-")
    assert runtime.image_exists(gold.image)
    assert gold.python == "/opt/venv/bin/python" and gold.python_version.startswith("3.11.")
    assert len(gold.tests) >= 20
    assert set(gold.durations) == set(gold.tests)
    assert gold.runs == 3 and len(gold.test_seconds) == 3
    assert not set(gold.tests) & set(gold.flaky)
    assert all("::" in node for node in gold.tests + gold.failing + gold.flaky)
    # a small suite fits its time budget whole: every file kept, each run split between two shards
    assert gold.suite is not None and gold.suite.whole and gold.suite.shards == 2
    assert {node.split("::")[0] for node in gold.tests} <= set(gold.suite.kept_files)
    _recheck(runtime, gold)


def test_a_suite_over_its_budget_keeps_a_sample_of_its_files_and_says_why(runtime, gold_envs, tmp_path):
    whole = gold_envs("markupsafe==3.0.2")
    gold = make_gold("markupsafe==3.0.2", tmp_path, runtime=runtime, runs=2,
                     budget=Budget(seconds=1.0, shards=1, seed=3))
    sample = gold.suite
    # one shard: a pilot of two files, and no time left for more
    assert sample is not None and sample.files == len(whole.suite.kept_files) and sample.budget_seconds == 1.0
    assert sample.found_by == "collection" and len(sample.kept_files) == 2
    assert sample.left_out_files and all("gold budget of 1 s" in why for why in sample.left_out_files.values())
    assert set(sample.kept_files) | set(sample.left_out_files) == set(whole.suite.kept_files)
    kept = set(sample.kept_files)
    assert gold.tests and {node.split("::")[0] for node in gold.tests} <= kept
    assert set(gold.tests) == {t for t in whole.tests if t.split("::")[0] in kept}  # the same verdicts, fewer files
    assert load(GoldEnv, tmp_path / "gold.json").suite == sample
    _recheck(runtime, gold)


def test_markupsafe_c_extension_is_in_the_image(runtime, gold_envs):
    gold = gold_envs("markupsafe==3.0.2")
    result = runtime.run(
        gold.image,
        [gold.python, "-c", "import markupsafe._speedups as s; print(s.__file__)"],
        timeout=60,
    )
    assert result.ok, result.output
    assert result.output.strip().endswith(".so")
    assert any("markupsafe._speedups" in t for t in gold.tests)  # the speedups are tested too


def test_second_run_reuses_the_cached_image(runtime, gold_envs, tmp_path):
    first = gold_envs("h11==0.16.0")
    again = make_gold("h11==0.16.0", tmp_path, runtime=runtime, runs=1)
    assert again.image == first.image and again.image_id == first.image_id
    assert again.build_seconds < first.build_seconds or again.build_seconds < 2.0
    record = load(GoldEnv, tmp_path / "gold.json")
    assert record.image == first.image and record.runs == 1


def test_gold_from_local_directory(runtime, base_image, tmp_path):
    archive = fetch_sdist("exceptiongroup", "1.2.2")
    with tarfile.open(archive) as tf:
        tf.extractall(tmp_path / "src", filter="data")
    (project,) = (tmp_path / "src").iterdir()
    shutil.rmtree(project / "tests" / "__pycache__", ignore_errors=True)
    gold = make_gold(str(project), tmp_path / "out", runtime=runtime)
    assert gold.source.kind == "local" and gold.source.name == "exceptiongroup"
    assert len(gold.tests) >= 20
    data = json.loads((tmp_path / "out" / "gold.json").read_text())
    assert data["tests"] == gold.tests
    _recheck(runtime, gold)


def test_gold_from_existing_image(runtime, gold_envs, tmp_path):
    built = gold_envs("markupsafe==3.0.2")
    gold = make_gold(
        None, tmp_path, image=built.image, test_command="python -m pytest tests/test_leak.py", runtime=runtime
    )
    assert gold.source.kind == "image" and gold.image == built.image
    assert gold.workdir == "/testbed" and gold.python.endswith("python")
    assert gold.tests and all(t.startswith("tests/test_leak.py::") for t in gold.tests)



def test_gold_records_ids_pytest_can_select(runtime, base_image, tmp_path, monkeypatch):
    """A class that inherits its tests from another module's class gets the node ids of its
    own module. Should an id still be rebuilt wrongly from some report (here: the class
    dropped, as cligym once did for inherited tests), the gold's run by node ids finds
    that pytest runs no such test and leaves it out instead of recording it."""
    from cligym.gold.suite import UNSELECTABLE
    from cligym.harness import testrun
    from tests.engine.test_gold_errors import make_project

    project = make_project(
        tmp_path / "p", "cligym-sample-ids",
        "class TestBase:\n    def test_value(self):\n        assert True\n\n"
        "def test_plain():\n    assert True\n",
    )
    (project / "tests" / "test_child.py").write_text(
        "from tests.test_sample import TestBase\n\nclass TestChild(TestBase):\n    pass\n")
    (project / "tests" / "__init__.py").write_text("")
    right = testrun.node_id_of

    def class_dropped(case):
        node = right(case)
        return node if "TestChild" not in node else node.replace("::TestChild", "")

    monkeypatch.setattr(testrun, "node_id_of", class_dropped)
    gold = make_gold(str(project), tmp_path / "out", runtime=runtime, runs=2)
    try:
        assert gold.left_out.get("tests/test_child.py::test_value") == UNSELECTABLE
        assert "tests/test_child.py::test_value" not in gold.tests
        assert "tests/test_sample.py::test_plain" in gold.tests
        monkeypatch.setattr(testrun, "node_id_of", right)
        again = make_gold(str(project), tmp_path / "again", runtime=runtime, runs=2)
        assert "tests/test_child.py::TestChild::test_value" in again.tests and not again.left_out
        _recheck(runtime, again)
    finally:
        runtime.remove_image(gold.image)
