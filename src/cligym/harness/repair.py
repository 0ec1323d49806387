"""Repair scripts made of steps, and running a script then tests in a broken image.

A repair is a list of ``RepairStep``s in the order they run. ``repair_script`` turns it into
one POSIX shell script; the checks that leave a step out (leave-one-repair-out), run some
steps only (reveal depth) or run another script first (the blocker check) all make their
scripts here, so every script a task is judged by has the same shape as its solution.
"""

from __future__ import annotations

from collections.abc import Sequence

from cligym.models.task import RepairStep

#: The first lines of every repair script.
SCRIPT_HEAD = ("#!/bin/sh", "# repair script: one step per change", "set -e")
#: The note of a script of several steps on their order.
RETRY_NOTE = ("# (a step that fails while another change is still in the way, such as a corrupted",
              "# system file that breaks pip, is tried again once the others are done)")


def repair_script(steps: Sequence[RepairStep], skip: int | None = None) -> str:
    """The script running ``steps`` in order (the one at index ``skip`` left out). Of
    several, each is a function tried again at the end when it fails the first time: one
    change may stand in the way of another's repair."""
    kept = [(number, step) for number, step in enumerate(steps, 1) if number - 1 != skip]
    parts = list(SCRIPT_HEAD)
    if len(steps) == 1 and kept:
        return "\n".join([*parts, f"# {kept[0][1].label}", *kept[0][1].lines]) + "\n"
    parts += [*RETRY_NOTE, 'retry=""']
    for number, step in kept:
        name = f"step_{number}"
        parts += [f"# {step.label}", f"{name}() {{", " &&\n".join(f"  {line}" for line in step.lines),
                  "}", f'{name} || retry="$retry {name}"']
    parts.append('for step in $retry; do "$step"; done')
    return "\n".join(parts) + "\n"
