"""The report as one self-contained HTML page (jinja2, autoescaped; charts inline)."""

from __future__ import annotations

from importlib import resources

import jinja2

from cligym.models.report import Report
from cligym.report.figures import PAPER_FUNNEL
from cligym.report.plots import charts


def fmt(value: float | int | None) -> str:
    """A number for a table cell: integers as they are, others with 2 decimals, big ones grouped."""
    if value is None:
        return "–"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def size(value: float | None) -> str:
    if value is None:
        return "–"
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:,.1f} {unit}" if unit != "B" else f"{int(value)} B"
        value /= 1000
    return ""  # unreachable


def counts(values: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in values.items()) or "none"


def render(report: Report) -> str:
    template = resources.files("cligym.report").joinpath("page.html").read_text(encoding="utf-8")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    page = env.from_string(template)
    return page.render(report=report, charts=charts(report), paper_funnel=PAPER_FUNNEL,
                       fmt=fmt, pct=pct, size=size, counts=counts)
