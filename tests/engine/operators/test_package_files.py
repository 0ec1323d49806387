"""package_files on real gold images: a submodule or data file of an installed
distribution deleted or cut short breaks only the tests that reach it, and reinstalling
the distribution from the image's wheelhouse (offline, no embedded bytes) repairs it.

python-dotenv's CLI tests wrap help text with click's lazily imported ``click._textwrap``;
apispec's OpenAPI validation tests load openapi-spec-validator's JSON schemas, one schema
per OpenAPI version, on first use. (A file a test module's imports reach is never a
target: one test module failing to import stops pytest's collection, and no test runs at
all; apispec's ``yaml_utils``, imported by its YAML test module, broke all 636 tests that
way.)"""

from __future__ import annotations

import re

import pytest

from .conftest import Broken, check_operator
from .test_table import Row

DOTENV = "python-dotenv==1.2.1"


APISPEC = "apispec==6.10.1"


V2_TEST = "tests/test_ext_marshmallow_openapi.py::test_openapi_tools_validate_v2"


#: A run of base64 text long enough to be an embedded file.
PAYLOAD = re.compile(r"[A-Za-z0-9+/]{200,}={0,2}")


def partial(r: Broken) -> None:
    """Some tests fail, not all; the targeted tests are among them; the repair is the
    offline reinstall of the distribution, with no bytes carried in the script."""
    assert 0 < len(r.failing) < len(r.gold.tests), f"{len(r.failing)} of {len(r.gold.tests)} failed"
    assert set(r.target.touching) <= set(r.failing)
    assert len(r.target.touching) < len(r.gold.tests)
    assert r.target.data.reinstall in r.solution and "--no-index" in r.solution
    assert "base64" not in r.solution and not PAYLOAD.search(r.solution)
    print(f"{r.target.key}: {len(r.failing)}/{len(r.gold.tests)} tests fail")


def textwrap_removed(r: Broken) -> None:
    partial(r)
    assert r.target.name == "click._textwrap" and r.target.data.dist == "click"
    assert "__pycache__" in r.lines[0]
    assert all(t.startswith("tests/test_cli.py::") for t in r.failing)


def schema_removed(r: Broken) -> None:
    partial(r)
    assert r.target.data.dist == "openapi-spec-validator"
    assert V2_TEST in r.failing


def schema_truncated(r: Broken) -> None:
    partial(r)
    assert 0 < r.target.data.keep < r.target.data.size
    assert r.lines == [f"RUN truncate -s {r.target.data.keep} {r.target.path}"]


ROWS = [
    Row("package_submodule_removed", DOTENV, textwrap_removed),
    Row("package_data_removed", APISPEC, schema_removed, target=lambda t: "/v2.0/" in t.path),
    Row("package_data_truncated", APISPEC, schema_truncated, target=lambda t: "/v2.0/" in t.path),
]


@pytest.mark.parametrize("row", [row.param() for row in ROWS])
def test_operator(runtime, probed, row: Row):
    gold, probe = probed(row.project)
    result = check_operator(runtime, gold, probe, row.operator, target_filter=row.target)
    row.check(result)
