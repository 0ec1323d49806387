"""A dataset's mix: no scenario family above ``MIX_SHARE`` of its tasks, and no set of failing
tests above ``MIX_SHARE`` of a project's tasks where its tasks fail enough sets for a spread.

An invert run keeps each family to its share of the tasks it aims for, but a run that ends
short of them holds more (a project whose tests reach nothing installed offers few changes
the sweeper does not undo: 5 tasks of 30 attempts, two of them one family), and the
projects' families add up across the dataset. So the dataset leaves out the fewest
validated tasks that bring every family to its share: of the family furthest over, a
near-duplicate's second task first, then one of the project where that family weighs most,
one the sweeper solves before one it does not, then by id; at most a tenth of the tasks.

A run keeps a failing set to a quarter of the tasks it aims for, so a run that ends short of
them may hold two of six tasks on one set. Before the families, each project whose tasks
fail at least ``1 / MIX_SHARE`` distinct sets (a spread can meet the share) leaves out the
fewest of them that bring every set to its share, in the same order of need. A project with
fewer sets keeps them (the report says why). The tasks left out stay in their project's run
and export; the dataset lists them with the reason.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from cligym.invert.scenario_search import share_cap
from cligym.models.report import MIX_SHARE
from cligym.models.task import Task
from cligym.report.mix import family_of, near_duplicate_key


class MixEntry(NamedTuple):
    """What the balance needs to know of one validated task."""

    task: str  # the task's id
    project: str
    family: str  # report.mix.family_of
    duplicate_of: str  # the first task of its near-duplicate group ("" when it has none)
    sweeper_solves: bool
    failing: str = ""  # its F2P set's key (``failing_key``); one key for every task when not known


def failing_key(tests: Iterable[str]) -> str:
    """A short key of one set of failing tests (its order aside)."""
    return hashlib.sha256("\n".join(sorted(set(tests))).encode()).hexdigest()[:16]


def mix_entries(tasks: list[Task]) -> list[MixEntry]:
    """The entries of validated tasks, in the order given (a near-duplicate group's first
    task is the first of it here)."""
    first: dict[tuple, str] = {}
    entries = []
    for task in tasks:
        key = near_duplicate_key(task)
        original = first.setdefault(key, task.instance_id)
        solves = bool(task.difficulty and task.difficulty.sweeper_solves)
        entries.append(MixEntry(task.instance_id, task.repo, family_of(task),
                                "" if original == task.instance_id else original, solves,
                                failing_key(task.FAIL_TO_PASS)))
    return entries


#: The most of its validated tasks a dataset leaves out for its mix: where a family is so
#: rare that a quarter would cost more, the mix stays as it is (its shares say so).
MAX_LEFT_OUT = 0.1


def balanced(entries: list[MixEntry], share: float = MIX_SHARE, budget: float = MAX_LEFT_OUT) -> dict[str, str]:
    """The tasks to leave out (id -> why): first, per project, so that no failing set holds
    more than ``share`` of its tasks where it has enough sets (``spread_sets``); then so
    that no family holds more than ``share`` of the tasks (``share_cap``), leaving out at
    most ``budget`` of them for it. No family is balanced when fewer families are present
    than a spread needs (1 / share), or when more than ``budget`` of the tasks would have
    to leave: then the cost would not buy the mix."""
    left = spread_sets(entries, share)
    kept = [e for e in entries if e.task not in left]
    return left | _balanced_families(kept, share, int(budget * len(entries)))


def spread_sets(entries: list[MixEntry], share: float = MIX_SHARE) -> dict[str, str]:
    """The tasks to leave out (id -> why) so that no project has one failing set in more
    than ``share`` of its tasks, for each project whose tasks fail at least 1 / share
    distinct sets (where one task of each set meets the share, so it is always met)."""
    left: dict[str, str] = {}
    for project in sorted({e.project for e in entries}):
        kept = [e for e in entries if e.project == project]
        if len({e.failing for e in kept}) * share < 1:
            continue
        while True:
            failing, count = max(Counter(e.failing for e in kept).items(), key=lambda fc: (fc[1], fc[0]))
            if count <= share_cap(share, len(kept)):
                break
            drop = _least_needed([e for e in kept if e.failing == failing], entries)
            kept.remove(drop)
            left[drop.task] = (f"one set of failing tests held {count} of {project}'s {len(kept) + 1} tasks, "
                               f"over {share:.0%}" + (f"; a near-duplicate of {drop.duplicate_of}"
                                                      if drop.duplicate_of else ""))
    return left


def _balanced_families(entries: list[MixEntry], share: float, budget: int) -> dict[str, str]:
    """The family balance of ``balanced`` over ``entries``, leaving out at most ``budget``."""
    if len({e.family for e in entries}) * share < 1:
        return {}
    kept = list(entries)
    left: dict[str, str] = {}
    while True:
        families = Counter(e.family for e in kept)
        family, count = max(families.items(), key=lambda fc: (fc[1], fc[0]))
        if count <= share_cap(share, len(kept)):
            return left
        if len(left) + 1 > budget:
            return {}
        drop = _least_needed([e for e in kept if e.family == family], kept)
        kept.remove(drop)
        left[drop.task] = (f"{family} held {count} of {len(kept) + 1} tasks, over {share:.0%}"
                           + (f"; a near-duplicate of {drop.duplicate_of}" if drop.duplicate_of else ""))


def _least_needed(candidates: list[MixEntry], kept: list[MixEntry]) -> MixEntry:
    """Of one family's tasks (or one project's set's), the one the dataset needs least: a
    near-duplicate's second, then one where they weigh most in their project, then one of
    the family commonest in the dataset, one the sweeper solves, then by id."""
    per_project = Counter(e.project for e in kept)
    in_project = Counter(e.project for e in candidates)
    families = Counter(e.family for e in kept)

    def need(entry: MixEntry) -> tuple[bool, float, int, bool, str]:
        weight = in_project[entry.project] / per_project[entry.project]
        return (not entry.duplicate_of, -weight, -families[entry.family], not entry.sweeper_solves,
                _descending(entry.task))

    return min(candidates, key=need)


def _descending(text: str) -> str:
    """A key that sorts ``text`` backwards (of equals, the greatest id leaves first: a fixed
    order, whatever order the tasks came in)."""
    return "".join(chr(0x10FFFF - ord(c)) for c in text)
