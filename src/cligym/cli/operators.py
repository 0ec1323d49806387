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
    carries)."""
    from cligym.invert.operators import REGISTRY

    rows = [
        {"name": op.name, "category": op.category, "broad": op.broad, "default": op.default,
         "offline": bool(op.offline), "symptom": op.symptom, "hint": op.hint}
        for op in sorted(REGISTRY.values(), key=lambda o: (o.category, o.name))
        if category is None or op.category == category
    ]
    if as_json:
        print_json(rows)
        return
    print_table(
        f"{len(rows)} operators in {len({r['category'] for r in rows})} categories",
        ("category", "name", "offline", "hint"),
        ([r["category"], r["name"] + (" (broad)" if r["broad"] else "") + ("" if r["default"] else " (named only)"),
          "yes" if r["offline"] else "no", r["hint"]] for r in rows),
    )
