"""``cligym demo`` end to end on its real default project (markupsafe 3.0.2, few attempts):
gold → invert → Harbor export → validate → report, and its summary names the report."""

from __future__ import annotations

import json
import subprocess
import sys

from cligym.layout import DemoDir
from cligym.models.io import load
from cligym.models.report import Report
from cligym.report import ReportDir


def test_demo_ends_with_a_report_of_its_tasks(tmp_path, base_image):
    out = tmp_path / "demo"
    done = subprocess.run([sys.executable, "-m", "cligym", "demo", "-o", str(out), "-n", "1", "--json"],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    page = ReportDir(DemoDir(out).report)
    assert summary["report"] == str(page.html) and page.html.is_file()
    report = load(Report, page.json)
    assert len(report.tasks) == summary["verified"] == summary["validated"] >= 1
    assert report.funnel["attempts"] == 1 and report.funnel["validated"] == summary["validated"]
    assert all(row.instruction and (page.path / row.instruction).is_file() for row in report.tasks)
