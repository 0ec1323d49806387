"""The pieces around the verdict bundle that need no container: export refuses to write
over records, the exporter's busybox check, and the default operator set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: A task record written by an earlier cligym (it loads unchanged).
RECORD = Path(__file__).parents[1] / "data" / "records-0.1.0" / "instance.json"


def make_run(path: Path) -> Path:
    """A run directory with one task record (what export refuses to lose)."""
    (path / "candidates").mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "tasks" / "t1").mkdir(parents=True)
    (path / "tasks" / "t1" / "instance.json").write_bytes(RECORD.read_bytes())
    return path


def test_export_over_its_run_is_one_line_on_the_command_line(tmp_path):
    run = make_run(tmp_path / "run")
    proc = subprocess.run([sys.executable, "-m", "cligym", "export", str(run), "-o", str(run), "--force"],
                          capture_output=True, text=True, timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "run directory" in lines[0], proc.stderr
    assert (run / "config.json").is_file() and (run / "tasks" / "t1" / "instance.json").read_bytes() == RECORD.read_bytes()
