"""The report stage: statistics of gold, run, export, rollout and curate outputs (or a
whole dataset) as report.json and one self-contained HTML page."""

from cligym.report.stage import ReportDir, make_report

__all__ = ["ReportDir", "make_report"]
