"""Bad input to ``cligym gold``: one line on stderr, non-zero exit, nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cligym.runtime.names import scratch

SAMPLE_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1"
dependencies = {deps}

[tool.setuptools]
py-modules = ["{module}"]
"""

def make_project(root: Path, name: str, test_body: str, deps: str = "[]") -> Path:
    module = name.replace("-", "_")
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(SAMPLE_PYPROJECT.format(name=name, deps=deps, module=module))
    (root / f"{module}.py").write_text("VALUE = 1\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_sample.py").write_text(f"import {module}\n\n{test_body}\n")
    return root


def assert_nothing_left(runtime, proc: subprocess.CompletedProcess) -> None:
    """No container and no scratch or untagged image of the failed run survived: none
    carries the owner label of the process that ran it (other processes use the same
    engine meanwhile, so only what this run made is looked at). A gold image it built is a
    cache entry and stays (``cligym.runtime.names``), with its build steps under it."""
    assert runtime.labelled_containers(pid=proc.pid) == []
    top = runtime._api.images(filters={"label": f"cligym.pid={proc.pid}"})  # top-level images only
    left = [image.get("RepoTags") or image["Id"] for image in top
            if not [t for t in image.get("RepoTags") or [] if not scratch(t)]]
    assert left == []


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the CLI; the result also carries the process id (``.pid``), which labels what it made."""
    with subprocess.Popen(
        [sys.executable, "-m", "cligym", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}, cwd=cwd,
    ) as child:
        try:
            out, err = child.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            child.kill()
            raise
    proc = subprocess.CompletedProcess(child.args, child.returncode, out, err)
    proc.pid = child.pid  # type: ignore[attr-defined]
    return proc


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("cligym: error: ")
    assert "Traceback" not in proc.stderr + proc.stdout
    for needle in needles:
        assert needle in lines[0], lines[0]


CASES = {
    "no-such-package": (["cligym-no-such-package-7d1c0e==1.0"], ["not found on the package index"]),
    "no-such-version": (["h11==0.0.999"], ["has no version 0.0.999"]),
    "no-sdist": (["playwright==1.49.0"], ["no usable source distribution"]),
    "sdist-without-tests": (["tomli-w==1.2.0"], ["ships no tests"]),
    "not-a-spec": (["h11>=1"], ["exact version"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_pypi_sources(case, runtime, base_image, tmp_path):
    args, needles = CASES[case]
    proc = run_cli("gold", *args, "-o", str(tmp_path / "out"), "-q")
    assert_one_line_error(proc, *needles)
    assert_nothing_left(runtime, proc)
    assert not (tmp_path / "out" / "gold.json").exists()


def test_local_path_that_is_not_a_project(tmp_path, runtime):
    (tmp_path / "empty").mkdir()
    proc = run_cli("gold", str(tmp_path / "empty"), "-o", str(tmp_path / "out"), "-q")
    assert_one_line_error(proc, "is not a Python project")
    proc = run_cli("gold", str(tmp_path / "missing"), "-o", str(tmp_path / "out"), "-q")
    assert_one_line_error(proc, "is not a directory")


def test_install_that_fails(tmp_path, runtime, base_image):
    project = make_project(
        tmp_path / "p", "cligym-sample-baddep", "def test_ok():\n    assert True",
        deps='["cligym-no-such-dependency-51ab==2.0"]',
    )
    proc = run_cli("gold", str(project), "-o", str(tmp_path / "out"), "-q")
    assert_one_line_error(proc, "failed", "cligym-no-such-dependency-51ab")
    assert_nothing_left(runtime, proc)


def test_gold_suite_where_nothing_passes_leaves_nothing(tmp_path, runtime, base_image):
    project = make_project(
        tmp_path / "p", "cligym-sample-failing",
        "def test_one():\n    assert False\n\ndef test_two():\n    raise RuntimeError('broken')",
    )
    proc = run_cli("gold", str(project), "-o", str(tmp_path / "out"), "-q")
    assert_one_line_error(proc, "no test passed")
    # no container survived, and no image but the gold image (a cache entry)
    assert_nothing_left(runtime, proc)
    assert not (tmp_path / "out" / "gold.json").exists()


def test_image_source_errors(tmp_path, runtime):
    proc = run_cli("gold", "--image", "cligym/absent:none", "--test-cmd", "pytest", "-o", str(tmp_path), "-q")
    assert_one_line_error(proc, "not present")
    proc = run_cli("gold", "--image", "cligym/absent:none", "-o", str(tmp_path), "-q")
    assert_one_line_error(proc, "--test-cmd")


def test_engine_not_running(tmp_path):
    proc = run_cli("gold", "h11==0.16.0", "-o", str(tmp_path), "-q",
                   env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert_one_line_error(proc, "Docker engine is not reachable", "dockerd")
    assert proc.returncode == 3


def test_help_explains_options():
    proc = run_cli("gold", "--help")
    assert proc.returncode == 0
    for option in ("--output", "--image", "--test-cmd", "--base-image", "--profile", "--runs", "--json"):
        assert option in proc.stdout
