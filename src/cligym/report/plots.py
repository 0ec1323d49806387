"""The report's charts: matplotlib figures rendered to inline SVG text (no files, no
network to view them). Each function returns None when it has nothing to draw."""

from __future__ import annotations

import functools
import io
from collections.abc import Mapping
from types import ModuleType

from cligym.models.report import PassRates, Report
from cligym.report.figures import PAPER, PAPER_FUNNEL

COLOUR = "#3b6ea5"
PAPER_COLOUR = "#c0c0c0"


@functools.cache
def _pyplot() -> ModuleType:
    """matplotlib's pyplot, imported when a chart is drawn (its import takes about half a
    second, which every process that imports the report, and draws nothing, would pay)."""
    import matplotlib

    matplotlib.use("Agg")  # no display: render to files only
    import matplotlib.pyplot

    return matplotlib.pyplot


def _svg(fig) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    _pyplot().close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and doctype: the SVG is inlined in HTML


def _figure(title: str, *, width: float = 6.0, height: float = 3.2, xlabel: str = "", ylabel: str = ""):
    fig, ax = _pyplot().subplots(figsize=(width, height))
    ax.set_title(title, fontsize=11)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def bars(title: str, counts: Mapping[str, int] | Mapping[str, float], *, xlabel: str = "") -> str | None:
    """Horizontal bars in the order of ``counts``, the first on top."""
    if not counts:
        return None
    names = list(counts)[::-1]
    fig, ax = _figure(title, height=max(2.0, 0.32 * len(names) + 1.0), xlabel=xlabel)
    ax.barh(names, [counts[n] for n in names], color=COLOUR)
    return _svg(fig)


def columns(title: str, counts: dict[str, int] | dict[int, int], *, xlabel: str) -> str | None:
    """One column per value, in the given order; integer values run without gaps from the
    smallest to the largest (a value no task has is drawn as an empty column)."""
    if not counts or not any(counts.values()):
        return None
    if all(isinstance(k, int) for k in counts):
        low, high = min(counts), max(counts)  # type: ignore[type-var]
        counts = {k: counts.get(k, 0) for k in range(low, high + 1)}  # type: ignore[call-overload]
    fig, ax = _figure(title, width=4.0, height=2.8, xlabel=xlabel, ylabel="tasks")
    ax.bar([str(k) for k in counts], list(counts.values()), color=COLOUR, width=0.6)
    ax.yaxis.get_major_locator().set_params(integer=True)
    return _svg(fig)


def shares(title: str, values: dict[str, float | None]) -> str | None:
    """Horizontal bars of shares between 0 and 1, each labelled with its percentage."""
    values = {k: v for k, v in values.items() if v is not None}
    if not values:
        return None
    names = list(values)[::-1]
    fig, ax = _figure(title, width=4.0, height=2.8, xlabel="share of measured tasks")
    ax.barh(names, [values[n] for n in names], color=COLOUR, height=0.5)
    for row, name in enumerate(names):
        ax.text(min(values[name] + 0.02, 0.9), row, f"{100 * values[name]:.0f}%", va="center", fontsize=9)
    ax.set_xlim(0, 1)
    return _svg(fig)


def histogram(title: str, values: list[float] | list[int], *, xlabel: str, paper: float | None = None) -> str | None:
    """A histogram of ``values``; with ``paper``, the paper's mean as a dashed line."""
    if not values:
        return None
    fig, ax = _figure(title, xlabel=xlabel, ylabel="tasks")
    ax.hist(values, bins=min(20, max(1, len(set(values)))), color=COLOUR)
    if paper is not None:
        ax.axvline(paper, color="black", linestyle="--", linewidth=1, label=f"paper's mean {paper:g}")
        ax.legend(frameon=False, fontsize=8)
    return _svg(fig)


def grouped_histogram(title: str, groups: dict[str, list[int]], *, xlabel: str) -> str | None:
    """Several distributions on one axis (issue words per style, with and without hint)."""
    groups = {k: v for k, v in groups.items() if v}
    if not groups:
        return None
    fig, ax = _figure(title, xlabel=xlabel, ylabel="tasks")
    ax.hist(list(groups.values()), bins=12, label=list(groups), histtype="step", linewidth=1.4)
    ax.legend(frameon=False, fontsize=7)
    return _svg(fig)


def funnel(ours: dict[str, int], paper: dict[str, int]) -> str | None:
    """Our stages beside the paper's where it reports the same stage."""
    if not any(ours.values()):
        return None
    names = list(ours)
    fig, ax = _figure("From attempts to kept trajectories", width=7.0)
    positions = range(len(names))
    ax.bar([p - 0.2 for p in positions], [ours[n] for n in names], width=0.4, color=COLOUR, label="ours")
    ax.bar([p + 0.2 for p in positions], [paper.get(n, 0) for n in names], width=0.4, color=PAPER_COLOUR,
           label="paper")
    ax.set_xticks(list(positions), names, rotation=20)
    ax.set_yscale("symlog")
    ax.legend(frameon=False, fontsize=8)
    return _svg(fig)


def pass_bars(title: str, groups: dict[str, PassRates]) -> str | None:
    groups = {k: v for k, v in groups.items() if v.pass_at_1 is not None}
    if not groups:
        return None
    names = list(groups)
    fig, ax = _figure(title, height=max(2.0, 0.4 * len(names) + 1.0))
    rows = range(len(names))
    ax.barh([r + 0.2 for r in rows], [groups[n].pass_at_1 or 0 for n in names], height=0.4, color=COLOUR,
            label="pass@1")
    ax.barh([r - 0.2 for r in rows], [groups[n].pass_at_k or 0 for n in names], height=0.4, color=PAPER_COLOUR,
            label="pass@k")
    ax.set_yticks(list(rows), names)
    ax.set_xlim(0, 1)
    ax.legend(frameon=False, fontsize=8)
    return _svg(fig)


def charts(report: Report) -> dict[str, str]:
    """Every chart the report can draw, by id (absent: nothing to draw)."""
    made = {
        "categories": bars("Tasks per category", report.categories, xlabel="tasks"),
        "operators": bars("Tasks per operator", report.operators, xlabel="tasks"),
        "fail_fractions": histogram("Share of the selected tests a task fails", report.fail_fractions,
                                    xlabel="fail fraction"),
        "f2p": histogram("FAIL_TO_PASS tests per task", report.f2p_counts, xlabel="tests",
                         paper=PAPER["FAIL_TO_PASS"]),
        "p2p": histogram("PASS_TO_PASS tests per task", report.p2p_counts, xlabel="tests",
                         paper=PAPER["PASS_TO_PASS"]),
        "dockerfile": histogram("Dockerfile lines per task", report.dockerfile_lines, xlabel="lines",
                                paper=PAPER["Dockerfile lines"]),
        "issue_words": grouped_histogram("Issue text length", report.issue_words, xlabel="words"),
        "funnel": funnel(report.funnel, PAPER_FUNNEL),
        "discards": bars("Why attempts were discarded", report.discard_reasons, xlabel="attempts"),
    }
    if report.phase_seconds_per_task is not None:
        made["phases"] = bars("Where the time went: seconds per verified task", report.phase_seconds_per_task.spent(),
                              xlabel="seconds")
    d = report.difficulty
    if d.measured:  # the measured difficulty's distributions
        made |= {
            "difficulty_labels": columns("Tasks per difficulty label", d.labels, xlabel="label"),
            "difficulty_k": columns("Necessary changes (k)", d.k, xlabel="k"),
            "reveal_depth": columns("Reveal depth", d.reveal_depth, xlabel="repair-and-rerun rounds"),
            "repair_breadth": columns("Repair breadth", d.breadth, xlabel="distinct paths the repair touches"),
            "difficulty_shares": shares("How much the failure gives away",
                                        {"sweeper solves": d.sweeper_solves, "culprit named": d.culprit_named}),
        }
    if report.rollouts is not None:
        r = report.rollouts
        made |= {
            "pass_category": pass_bars("Rollouts: pass rate per category", r.per_category),
            "pass_difficulty": pass_bars("Rollouts: pass rate per difficulty", r.per_difficulty),
            "pass_hint": pass_bars("Rollouts: hint and no hint", r.by_hint),
            "steps": histogram("Agent steps per rollout attempt", r.steps, xlabel="steps"),
            "stops": bars("Rollouts: why attempts stopped", r.stop_reasons, xlabel="attempts"),
        }
    return {name: svg for name, svg in made.items() if svg is not None}
