"""The dataset's mix: the fewest validated tasks left out so that no family holds more than
a quarter of the dataset, near-duplicates first."""

from __future__ import annotations

from collections import Counter

from cligym.dataset.mix import MAX_LEFT_OUT, MixEntry, balanced
from cligym.invert.scenario_search import share_cap


def entries(spec: dict[str, dict[str, int]], duplicates: dict[str, str] | None = None) -> list[MixEntry]:
    """project -> family -> how many tasks; ids like ``p.family.3``."""
    duplicates = duplicates or {}
    out = []
    for project, families in spec.items():
        for family, count in families.items():
            for n in range(count):
                task = f"{project}.{family}.{n}"
                out.append(MixEntry(task, project, family, duplicates.get(task, ""), False))
    return out


def shares_after(all_entries: list[MixEntry], left: dict[str, str]) -> Counter:
    return Counter(e.family for e in all_entries if e.task not in left)


# eight projects as a default build made them: flat projects end with 5 tasks, two of them
# of each of the two families that resist the sweeper there
FLAT = {"library_loading": 2, "stdlib_shadow": 2, "environment_variables": 1}
BUILD = {**{f"flat{i}": FLAT for i in range(5)},
         "deep1": {"pip_configuration": 2, "import_shadow": 2, "library_loading": 2, "startup_hook": 2},
         "deep2": {"pip_configuration": 2, "startup_hook": 2, "stdlib_shadow": 2, "import_shadow": 2,
                   "library_loading": 1, "import_system": 1},
         "deep3": {"pip_configuration": 2, "import_shadow": 2, "library_loading": 2, "startup_hook": 2,
                   "interrupted_pip": 1, "stdlib_shadow": 1}}


def test_the_fewest_tasks_leave_so_that_no_family_is_over_a_quarter() -> None:
    every = entries(BUILD)
    before = Counter(e.family for e in every)
    assert before["library_loading"] > len(every) / 4  # the build as made is over the share
    left = balanced(every)
    after = shares_after(every, left)
    held = len(every) - len(left)
    assert max(after.values()) <= share_cap(0.25, held) <= held / 4
    assert len(left) <= MAX_LEFT_OUT * len(every)
    # one fewer would not do: every task left out was needed
    for task in left:
        fewer = {t: w for t, w in left.items() if t != task}
        assert max(shares_after(every, fewer).values()) > share_cap(0.25, len(every) - len(fewer))
    assert all("over 25%" in why for why in left.values())


def test_near_duplicates_leave_first_then_the_project_where_the_family_weighs_most() -> None:
    every = entries(BUILD, duplicates={"flat3.stdlib_shadow.1": "flat3.stdlib_shadow.0"})
    left = balanced(every)
    assert "near-duplicate of flat3.stdlib_shadow.0" in left["flat3.stdlib_shadow.1"]
    # library_loading weighs 2 of 5 in a flat project, 2 of 8 in a deep one
    assert all(t.startswith("flat") for t in left)


def test_a_dataset_within_the_share_or_with_too_few_families_keeps_everything() -> None:
    assert balanced(entries({"p": {"a": 1, "b": 1, "c": 1, "d": 1}, "q": {"a": 1, "b": 1, "c": 1, "d": 1}})) == {}
    assert balanced(entries({"p": {"a": 5, "b": 1, "c": 1}})) == {}  # three families: no spread meets a quarter


def test_the_balance_is_deterministic() -> None:
    every = entries(BUILD)
    assert balanced(every) == balanced(list(reversed(every)))


def test_a_rare_family_does_not_cost_most_of_the_dataset() -> None:
    """Where a quarter would cost more than a tenth of the tasks (one family so rare that the
    others would have to shrink to its size), the mix stays as it is."""
    for spec in ({"p": {"a": 10, "b": 10, "c": 10, "d": 1}}, {"p": {"a": 10, "b": 10, "c": 10, "d": 1, "e": 1}},
                 {"p": {"a": 20, "b": 20, "c": 3, "d": 3}}):
        assert balanced(entries(spec)) == {}


def with_sets(project: str, sets: dict[str, int], family: str = "f") -> list[MixEntry]:
    """One project's tasks by failing set: set -> how many tasks."""
    return [MixEntry(f"{project}.{name}.{n}", project, f"{family}{n % 5}", "", False, name)
            for name, count in sets.items() for n in range(count)]


def test_a_project_with_enough_failing_sets_keeps_none_over_a_quarter() -> None:
    """A run that ended short of its aim holds 2 of 6 tasks on one set: the dataset leaves out
    the fewest that bring every set of the project to a quarter; other projects keep theirs."""
    project = with_sets("p", {"a": 2, "b": 2, "c": 1, "d": 1})
    other = with_sets("q", {"x": 1, "y": 1, "z": 1, "w": 1})
    left = balanced(project + other)
    held = Counter(e.failing for e in project if e.task not in left)
    assert max(held.values()) <= share_cap(0.25, sum(held.values()))
    assert len(left) == 2 and all(t.startswith("p.") for t in left)
    assert all("one set of failing tests held" in why for why in left.values())


def test_a_project_with_too_few_failing_sets_keeps_them() -> None:
    """Three sets cannot meet a quarter however many tasks leave: none does (the report says why)."""
    assert balanced(with_sets("p", {"a": 2, "b": 2, "c": 2})) == {}


def test_of_a_set_a_near_duplicate_leaves_first() -> None:
    project = with_sets("p", {"a": 3, "b": 1, "c": 1, "d": 1})
    project[2] = project[2]._replace(duplicate_of=project[0].task)
    left = balanced(project)
    assert project[2].task in left and "near-duplicate" in left[project[2].task]
