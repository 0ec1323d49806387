"""How broad a dataset's mix is (``MixFigures``): a dataset is only as broad as its mix, and
near-duplicates inflate any pass rate measured on it."""

from __future__ import annotations

from collections import Counter, defaultdict

from cligym.models.report import MIX_SHARE, MixFigures, ProjectMix
from cligym.models.task import Task


def family_of(task: Task) -> str:
    """The task's mechanism: its scenario's family; a composite's first change's category."""
    if task.family:
        return task.family
    return f"{task.origin}: {task.category}" if task.origin == "operators" else task.origin


def near_duplicate_key(task: Task) -> tuple:
    """Tasks with one key are near-duplicates: one project, one failing set, and their
    faults broke the same paths (their blockers aside)."""
    broken = frozenset(p for a in task.applied if a.role == "fault" for p in (a.places or [a.target]))
    return task.repo, frozenset(task.FAIL_TO_PASS), broken


def _project(name: str, tasks: list[Task]) -> ProjectMix:
    sets = Counter(frozenset(t.FAIL_TO_PASS) for t in tasks)
    failing, top = sets.most_common(1)[0] if sets else (frozenset(), 0)
    share = round(top / len(tasks), 4) if tasks else None
    over, few = "", len(sets) * MIX_SHARE < 1
    if share is not None and share > MIX_SHARE and len(tasks) * MIX_SHARE >= 1:  # a share a spread could meet
        sharing = [t for t in tasks if frozenset(t.FAIL_TO_PASS) == failing]
        over = f"{top} of {len(tasks)} tasks fail the same {plural(len(failing), 'test')}, {_why(sharing, few)}; " \
               f"{plural(len(sets), 'distinct failing set')} in all"
    return ProjectMix(project=name, tasks=len(tasks), failing_sets=len(sets), top_failing_share=share, over=over,
                      too_few_sets=bool(over) and few)


def _why(sharing: list[Task], few: bool) -> str:
    """Why tasks share one failing set, as far as their records tell (``few``: the project's
    tasks fail fewer distinct sets than a spread needs)."""
    if all(not t.PASS_TO_PASS for t in sharing):
        return ("every test each of them ran: no change to this environment that the run found fails only some "
                "of the project's tests (typical of tests that import the project from its working tree and reach "
                "no installed module but the test tooling's)")
    if few:
        return (f"while other tests pass; a share of {MIX_SHARE:.0%} needs {round(1 / MIX_SHARE)} distinct sets, and "
                "the run found no other set its changes fail (once a set held its share of the tasks the run aimed "
                "for, it refused states that fail it again while other sets could be had)")
    return "while other tests pass: the run found no narrower change this often, and the dataset did not balance it"


def plural(count: int, noun: str) -> str:
    """``1 test``, ``3 tests``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def mix_figures(tasks: list[Task]) -> MixFigures:
    families = Counter(family_of(t) for t in tasks)
    by_project: dict[str, list[Task]] = defaultdict(list)
    groups: dict[tuple, list[str]] = defaultdict(list)
    solved: dict[str, list[bool]] = defaultdict(list)
    for task in tasks:
        by_project[task.repo].append(task)
        groups[near_duplicate_key(task)].append(task.instance_id)
        if task.difficulty is not None:
            solved[family_of(task)].append(task.difficulty.sweeper_solves)
    return MixFigures(
        families=dict(families.most_common()),
        sweeper_solves={f: round(sum(solved[f]) / len(solved[f]), 4) if solved[f] else None for f in families},
        top_family_share=round(families.most_common(1)[0][1] / len(tasks), 4) if tasks else None,
        categories=dict(Counter(t.category for t in tasks).most_common()),
        projects=[_project(name, by_project[name]) for name in sorted(by_project)],
        near_duplicates=[sorted(ids) for ids in groups.values() if len(ids) > 1],
    )
