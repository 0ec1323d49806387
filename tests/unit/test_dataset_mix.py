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
