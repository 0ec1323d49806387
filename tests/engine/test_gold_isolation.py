"""No project code runs on the host: ``cligym gold`` downloads on the host and builds in a
container. Also the early and clear failures: an unusable ``-o``, a failing setup.py."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import time
from pathlib import Path

import pytest

from cligym.errors import BadInput, GoldFailed
from cligym.gold import make_gold
from cligym.gold.index import pip_settings
from cligym.gold.metadata import SourceTree
from cligym.gold.source import fetch_sdist
from cligym.gold.wheel_build import build_error
from tests.engine.test_gold_errors import assert_one_line_error, make_project, run_cli

FIXTURE = Path(__file__).parents[1] / "data" / "setupmarker"


def made_here(runtime) -> tuple[set[str], set[str]]:
    """The containers and images this process made (other processes share the engine)."""
    return set(runtime.labelled_containers(mine=True)), runtime.labelled_images(mine=True)

BOOM_SETUP = """\
from setuptools import setup

raise RuntimeError("boom: missing libfoo")
setup(name="cligym-sample-boom", version="0.1", py_modules=["cligym_sample_boom"])
"""

def test_setup_py_runs_in_the_container_not_on_the_host(tmp_path, runtime, base_image):
    marker = tmp_path / "host-side" / "marker.txt"
    project = tmp_path / "setupmarker"
    shutil.copytree(FIXTURE, project)
    setup_py = project / "setup.py"
    setup_py.write_text(setup_py.read_text().replace("@HOST_MARKER@", str(marker)))
    gold = make_gold(str(project), tmp_path / "out", runtime=runtime, runs=1)
    try:
        # its own test checks that setup.py ran (and wrote the marker) where the wheel was built
        assert "tests/test_setupmarker.py::test_setup_py_ran_at_build_time" in gold.tests
        assert not marker.exists() and not marker.parent.exists()
        assert not (project / "setupmarker_built.py").exists()  # the host's tree was not built in
        built = runtime.run(gold.image, [gold.python, "-c", "import setupmarker_built as m; print(m.MARKER)"])
        assert built.ok and built.output.strip() == str(marker), built.output
    finally:
        # the marker's path is this run's: no other run builds this gold image, so it goes
        runtime.remove_image(gold.image)


def test_setup_py_failure_shows_its_cause(tmp_path, runtime, base_image):
    project = tmp_path / "boom"
    (project / "tests").mkdir(parents=True)
    (project / "setup.py").write_text(BOOM_SETUP)
    (project / "cligym_sample_boom.py").write_text("VALUE = 1\n")
    (project / "tests" / "test_boom.py").write_text("def test_ok():\n    assert True\n")
    before = made_here(runtime)
    with pytest.raises(GoldFailed, match="boom: missing libfoo"):
        make_gold(str(project), tmp_path / "out", runtime=runtime, runs=1)
    assert made_here(runtime) == before  # the build container is gone, no image was made
    assert not (tmp_path / "out").exists()
    proc = run_cli("gold", str(project), "-o", str(tmp_path / "out"), "-q")
    # named by its setup.py (read, not run), not by its directory
    assert_one_line_error(proc, "building cligym-sample-boom failed", "RuntimeError: boom: missing libfoo")
    assert proc.returncode == GoldFailed.exit_code


@pytest.mark.parametrize("where", ["under-a-file", "in-proc"])
def test_unusable_output_fails_at_once(tmp_path, runtime, where, monkeypatch):
    (tmp_path / "file").write_text("not a directory\n")
    out = tmp_path / "file" / "out" if where == "under-a-file" else Path("/proc/cligym-gold-out")
    home = tmp_path / "home"
    monkeypatch.setenv("CLIGYM_HOME", str(home))
    before = made_here(runtime)
    started = time.monotonic()
    with pytest.raises(BadInput, match="output"):
        make_gold("markupsafe==3.0.2", out, runtime=runtime)
    assert time.monotonic() - started < 0.5
    proc = run_cli("gold", "markupsafe==3.0.2", "-o", str(out), "-q", env={"CLIGYM_HOME": str(home)})
    assert_one_line_error(proc, str(out))
    assert proc.returncode == 2
    assert not home.exists()  # nothing downloaded
    assert made_here(runtime) == before  # nothing built or run


def test_output_that_is_a_file(tmp_path, runtime):
    (tmp_path / "file").write_text("x\n")
    proc = run_cli("gold", "markupsafe==3.0.2", "-o", str(tmp_path / "file"), "-q")
    assert_one_line_error(proc, "is not a directory")
    assert (tmp_path / "file").read_text() == "x\n"


def test_build_requirements_are_read_statically(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling>=1.20", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'
    )
    assert SourceTree(tmp_path).build_requirements() == ["hatchling>=1.20", "hatch-vcs"]
    (tmp_path / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=61"]\n')
    assert SourceTree(tmp_path).build_requirements() == ["setuptools>=61", "wheel"]
    (tmp_path / "pyproject.toml").unlink()
    assert SourceTree(tmp_path).build_requirements() == ["setuptools>=40.8.0", "wheel"]


def test_build_error_picks_the_real_cause():
    pip_output = """\
Processing /build/src/1/boom
  Preparing metadata (pyproject.toml): started
  error: subprocess-exited-with-error

  × Getting requirements to build wheel did not run successfully.
  │ exit code: 1
  ╰─> [14 lines of output]
      Traceback (most recent call last):
        File "setup.py", line 3, in <module>
      RuntimeError: boom: missing libfoo
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: subprocess-exited-with-error
"""
    assert build_error(pip_output) == "RuntimeError: boom: missing libfoo"
    compiler = "  foo.c:1:10: fatal error: foo.h: No such file or directory\n  error: command '/usr/bin/gcc' failed\n"
    assert build_error(compiler) == "foo.c:1:10: fatal error: foo.h: No such file or directory"
    assert build_error("error: subprocess-exited-with-error\n") == "the build failed without output"


def test_dependency_with_only_an_sdist_is_built_in_the_container(tmp_path, runtime, base_image):
    """docopt 0.6.2 ships no wheel: its sdist is downloaded, built in the build container,
    and installed in the gold image from the wheelhouse like any other wheel."""
    project = make_project(
        tmp_path / "p", "cligym-sample-docopt",
        "import docopt\n\ndef test_docopt():\n    assert docopt.__version__ == '0.6.2'",
        deps='["docopt==0.6.2"]',
    )
    gold = make_gold(str(project), tmp_path / "out", runtime=runtime, runs=1)
    assert gold.tests == ["tests/test_sample.py::test_docopt"]


def _local_index(root: Path, name: str, version: str, sha: str | None = None) -> Path:
    """A one-project simple index (PEP 503) in ``root``, whose sdist holds a tests file."""
    staging = root / "staging" / f"{name}-{version}"
    (staging / "tests").mkdir(parents=True)
    (staging / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    files = root / "files"
    files.mkdir()
    archive = files / f"{name}-{version}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(staging, arcname=staging.name)
    digest = sha or hashlib.sha256(archive.read_bytes()).hexdigest()
    page = root / "simple" / name
    page.mkdir(parents=True)
    (page / "index.html").write_text(
        f'<html><body><a href="../../files/{archive.name}#sha256={digest}">{archive.name}</a></body></html>'
    )
    return root / "simple"


def test_sdist_comes_from_the_index_pip_is_configured_with(tmp_path, monkeypatch):
    simple = _local_index(tmp_path / "index", "cligym-fake", "1.0")
    monkeypatch.setenv("CLIGYM_HOME", str(tmp_path / "home"))
    for key, value in {"PIP_INDEX_URL": simple.as_uri(), "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": ""}.items():
        monkeypatch.setenv(key, value)
    pip_settings.cache_clear()
    try:
        assert pip_settings().indexes == (simple.as_uri(),)
        archive = fetch_sdist("cligym-fake", "1.0")
        assert archive.name == "cligym-fake-1.0.tar.gz" and archive.is_relative_to(tmp_path / "home")
        with pytest.raises(BadInput, match="has no version 2.0"):
            fetch_sdist("cligym-fake", "2.0")
        with pytest.raises(BadInput, match="not found on the package index"):
            fetch_sdist("cligym-absent", "1.0")
        bad = _local_index(tmp_path / "bad", "cligym-fake", "1.0", sha="0" * 64)
        monkeypatch.setenv("PIP_INDEX_URL", bad.as_uri())
        monkeypatch.setenv("CLIGYM_HOME", str(tmp_path / "home2"))
        pip_settings.cache_clear()
        with pytest.raises(GoldFailed, match="does not match the sha256"):
            fetch_sdist("cligym-fake", "1.0")
    finally:
        monkeypatch.undo()
        pip_settings.cache_clear()
