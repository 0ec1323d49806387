"""``cligym report``: read what cligym made, compute every figure once, write report.json
and index.html from that one computation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cligym.models.io import save, write_atomic
from cligym.models.report import Report
from cligym.report.figures import compute
from cligym.report.page import render
from cligym.report.sources import collect


@dataclass(frozen=True)
class ReportDir:
    """What ``cligym report`` writes: every number, and the page that shows them."""

    path: Path

    @property
    def json(self) -> Path:
        return self.path / "report.json"

    @property
    def html(self) -> Path:
        return self.path / "index.html"


def make_report(paths: list[Path], out: Path) -> Report:
    """The report of ``paths``, saved in ``out`` (report.json, index.html)."""
    sources = collect([Path(p) for p in paths])
    target = ReportDir(Path(out))
    target.path.mkdir(parents=True, exist_ok=True)
    report = compute(sources, target.path.resolve())
    page = render(report)
    save(report, target.json)
    write_atomic(target.html, page)  # a reader, or a kill -9, sees the old page or the new one
    return report
