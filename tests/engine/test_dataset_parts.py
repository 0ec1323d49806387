"""The dataset build's refusals that come after its engine check: a spent disk budget stops
the build before any unit, and a rerun with another seed or project list is refused."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from cligym.dataset.ledger import Ledger
from cligym.layout import DatasetDir


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cligym", "dataset", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_a_spent_disk_budget_stops_the_build_before_any_unit_and_says_so(tmp_path):
    projects = _write(tmp_path / "p.toml", "[[project]]\nsource = 'markupsafe==3.0.2'\n")
    out = tmp_path / "out"
    done = _cli("build", str(projects), "-o", str(out), "--max-disk", "1K", "--no-bundle", "-q", "--json")
    assert done.returncode == 0, done.stderr
    import json

    summary = json.loads(done.stdout)
    assert summary["stopped"] == "the dataset reached --max-disk (1024 bytes)"
    assert summary["tasks"] == 0 and summary["projects"][0]["state"] == "pending"
    rows = Ledger(DatasetDir(out).ledger, readonly=True).rows()
    assert {r["key"]: r["state"] for r in rows} == {
        "gold/markupsafe-3.0.2": "pending", "invert/markupsafe-3.0.2": "pending", "export/markupsafe-3.0.2": "pending"}
    status = _cli("status", str(out))
    assert status.returncode == 0 and "pending" in status.stdout


def test_a_rerun_with_another_seed_or_project_list_is_refused(tmp_path):
    projects = _write(tmp_path / "p.toml", "[[project]]\nsource = 'markupsafe==3.0.2'\n")
    out = tmp_path / "out"
    assert _cli("build", str(projects), "-o", str(out), "--max-disk", "1K", "-q").returncode == 0
    other_seed = _cli("build", str(projects), "-o", str(out), "--seed", "4", "-q")
    assert other_seed.returncode == 2 and "was built with seed 0; rerun with --seed 0" in other_seed.stderr
    _write(tmp_path / "p.toml", "[[project]]\nsource = 'h11==0.16.0'\n")
    other_list = _cli("build", str(projects), "-o", str(out), "-q")
    assert other_list.returncode == 2 and "was built from another project list" in other_list.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    refused = _cli("build", str(projects), "-o", str(tmp_path / "full"), "-q")
    assert refused.returncode == 2 and "is not empty and holds no dataset build" in refused.stderr
