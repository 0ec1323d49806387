"""``cligym operators``: list the built-in degradation operators."""

from __future__ import annotations

from typing import Annotated

import typer

from cligym.cli.app import print_json, print_table


def operators(
    category: Annotated[str | None, typer.Option(help="Only this category.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the built-in degradation operators and their categories.

    Operators marked "named only" are not in the default set: 'cligym invert' uses them only
    when named with --operators. The offline column says whether a task's repair can be
    done with only what is in the image (no network, no bytes only the reference solution
    carries). "undone by" names the sweeper's habit that undoes every state the operator
    makes, where that is sure."""
    from cligym.invert.operators import REGISTRY

    rows = [
        {"name": op.name, "category": op.category, "broad": op.broad, "default": op.default,
         "offline": bool(op.offline), "undone_by": op.undone_by, "symptom": op.symptom, "hint": op.hint}
        for op in sorted(REGISTRY.values(), key=lambda o: (o.category, o.name))
        if category is None or op.category == category
    ]
    if as_json:
        print_json(rows)
        return
    print_table(
        f"{len(rows)} operators in {len({r['category'] for r in rows})} categories",
        ("category", "name", "offline", "undone by", "hint"),
        ([r["category"], r["name"] + (" (broad)" if r["broad"] else "") + ("" if r["default"] else " (named only)"),
          "yes" if r["offline"] else "no", r["undone_by"] or "-", r["hint"]] for r in rows),
    )


def scenarios(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the incident scenarios: realistic stories of 2–4 interacting changes.

    The default 'cligym invert' run draws most attempts from them (the rest are chained
    composites of operators); '--scenarios NAMES' uses only the named ones. 'family' is its
    mechanism (a default run keeps each family under a quarter of its tasks); 'undone by'
    names the sweeper's habits that undo it (none: the task-blind battery of generic repairs
    is meant to fail on it; --json lists the habits it resists); 'shows cause', whether its
    mechanism puts an injected path in the failing output or the environment (the default
    mix draws the others likelier). Both are measured per task: see the task's difficulty.
    A Debian gold is broken by the 'debian' world's planners (incidents and single changes),
    undone or not by the Debian sweeper as a whole."""
    from cligym.invert.debian_changes import PLANNERS
    from cligym.invert.scenarios import REGISTRY
    from cligym.invert.scenarios.base import HABITS

    rows = [{"name": s.name, "world": "python", "family": s.family, "incident": s.incident,
             "resists_sweeper": s.resists_sweeper, "resists": list(s.resists),
             "undone_by": [h for h in HABITS if h not in s.resists],
             "shows_cause": s.shows_cause} for s in sorted(REGISTRY.values(), key=lambda s: s.name)]
    rows += [{"name": p.name, "world": "debian", "family": p.family, "incident": p.incident,
              "resists_sweeper": p.resists_sweeper, "resists": ["debian sweeper"] if p.resists_sweeper else [],
              "undone_by": [] if p.resists_sweeper else ["debian sweeper"], "shows_cause": p.shows_cause}
             for p in sorted(PLANNERS.values(), key=lambda p: p.name)]
    if as_json:
        print_json(rows)
        return
    yes = {True: "yes", False: "no"}
    print_table(f"{len(rows)} incident scenarios", ("name", "world", "family", "undone by", "shows cause",
                                                     "incident"),
                ([r["name"], r["world"], r["family"], ", ".join(r["undone_by"]) or "none", yes[r["shows_cause"]],
                  r["incident"]] for r in rows))
