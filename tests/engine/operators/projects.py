"""Local fixture projects for the operator table, next to the PyPI projects it uses.

``LOCAL`` maps a project name (used in the table instead of a PyPI spec) to a function
giving the project's directory:

- ``envtouch`` (tests/data/envtouch): its tests lean on areas the PyPI projects leave
  alone: zone data and the local zone, the CA bundles, the locale, text files in the
  default encoding, media types and the OS release file;
- ``markedproj``: a tiny project registering a custom marker in pyproject.toml. None of the
  PyPI projects used here registers one, and the ones that do (werkzeug: its reloader
  tests hang in a container; tqdm: needs plugins its metadata does not declare) cannot
  make a gold environment without a profile.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

ENVTOUCH = Path(__file__).resolve().parents[2] / "data" / "envtouch"

MARKED_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "markedproj"
version = "0.1.0"
requires-python = ">=3.9"

[project.optional-dependencies]
test = ["pytest"]

[tool.setuptools]
py-modules = ["markedproj"]

[tool.pytest.ini_options]
testpaths = ["tests"]
markers = ["fast: quick checks run on every commit"]
"""

MARKED_TESTS = """\
import pytest

import markedproj


@pytest.mark.fast
def test_double():
    assert markedproj.double(2) == 4


def test_double_negative():
    assert markedproj.double(-3) == -6
"""

def envtouch(tmp_path_factory) -> Path:
    return ENVTOUCH


def markedproj(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("markedproj")
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text(MARKED_PYPROJECT)
    (root / "markedproj.py").write_text("def double(x):\n    return 2 * x\n")
    (root / "tests" / "test_markedproj.py").write_text(MARKED_TESTS)
    return root


LOCAL: dict[str, Callable[..., Path]] = {"envtouch": envtouch, "markedproj": markedproj}
