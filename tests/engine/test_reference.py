"""Export refuses, on the command line, to write over the run it exports (one line, exit 2)."""

from __future__ import annotations

import subprocess
import sys

from tests.unit.test_reference import RECORD, make_run


def test_export_over_its_run_is_one_line_on_the_command_line(tmp_path):
    run = make_run(tmp_path / "run")
    proc = subprocess.run([sys.executable, "-m", "cligym", "export", str(run), "-o", str(run), "--force"],
                          capture_output=True, text=True, timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "run directory" in lines[0], proc.stderr
    assert ((run / "config.json").is_file()
            and (run / "tasks" / "t1" / "instance.json").read_bytes() == RECORD.read_bytes())
