"""A failing gold build leaves other processes' images alone."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from cligym.config import DEFAULT_BASE_IMAGE, LABEL


def cli(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cligym", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_a_failing_gold_leaves_other_processes_images(tmp_path, runtime, base_image):
    """A gold run that fails removes only what its own process built."""
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "Dockerfile").write_text(f"FROM {DEFAULT_BASE_IMAGE}\nLABEL {LABEL}=1\nRUN echo other > /other\n")
    other = f"cligym/test-other-process:{uuid.uuid4().hex[:8]}"
    runtime.build(context, other)  # this test process plays the other process
    try:
        project = tmp_path / "p"
        (project / "tests").mkdir(parents=True)
        (project / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
            '[project]\nname = "cligym-sample-allfail"\nversion = "0.1"\n'
            '[project.optional-dependencies]\ntest = ["pytest"]\n[tool.setuptools]\npy-modules = ["allfail"]\n')
        (project / "allfail.py").write_text("VALUE = 1\n")
        (project / "tests" / "test_it.py").write_text("def test_no():\n    assert False\n")
        proc = cli("gold", str(project), "-o", str(tmp_path / "out"), "-q")
        assert proc.returncode != 0 and "no test passed" in proc.stderr, proc.stderr
        assert runtime.image_exists(other)
    finally:
        runtime.remove_image(other)
