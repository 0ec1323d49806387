"""The report's mix figures, from task records alone: families (a composite by its first
change's category), each project's F2P sets with the one over a quarter flagged and why,
and near-duplicates (one project, one F2P set, the same broken paths)."""

from __future__ import annotations

from cligym.models.task import AppliedChange, Difficulty, Task
from cligym.report.mix import mix_figures


def task(n: int, repo: str, family: str, failing: list[str], broken: str, blocker: str = "",
         solved: bool = False, passing: tuple[str, ...] = ()) -> Task:
    applied = [AppliedChange(name="fault", category="package_files", target=broken, symptom="s", hint="h",
                               places=[broken])]
    if blocker:
        applied.append(AppliedChange(name=blocker, category="package_metadata", target="/etc/pip.conf",
                                       symptom="s", hint="h", role="blocker", places=["/etc/pip.conf"]))
    return Task(
        instance_id=f"{repo}.x.{n:010d}", repo=repo, image_name="img", gold_image_id="sha256:0", workdir="/w",
        test_command="pytest", fail_fraction=0.5, suite_size=10, seed=0, attempt=n,
        dockerfile=["RUN true"], FAIL_TO_PASS=failing, PASS_TO_PASS=list(passing),
        selected_tests=[*failing, *passing], solution="true", family=family,
        applied=applied, difficulty=Difficulty(k=2, reveal_depth=3, culprit_named=False, sweeper_solves=solved,
                                               breadth=2, subsystems=2, label="hard"))


def test_families_failing_sets_and_near_duplicates():
    tasks = [task(0, "p", "pip_configuration", ["t1"], "/m.py", "pip_user_install"),
             task(1, "p", "pip_configuration", ["t1"], "/m.py", "pip_install_target", solved=True),
             task(2, "p", "import_shadow", ["t2"], "/n.py"),
             task(3, "p", "", ["t3"], "/o.py"),
             task(4, "q", "startup_hook", ["u1"], "/a.py")]
    mix = mix_figures(tasks)
    assert mix.families == {"pip_configuration": 2, "import_shadow": 1, "operators: package_files": 1,
                            "startup_hook": 1}
    assert mix.top_family_share == 0.4 and mix.sweeper_solves["pip_configuration"] == 0.5
    p, q = mix.projects
    assert (p.project, p.tasks, p.failing_sets, p.top_failing_share) == ("p", 4, 3, 0.5)
    assert p.over.startswith("2 of 4 tasks fail the same 1 test, every test each of them ran: ")
    assert p.over.endswith("; 3 distinct failing sets in all")
    assert q.over == "" and q.top_failing_share == 1.0  # too few tasks to say
    assert mix.near_duplicates == [["p.x.0000000000", "p.x.0000000001"]]


def test_a_shared_failing_set_beside_passing_tests_says_so():
    tasks = [task(n, "p", f"f{n}", ["t1", "t2"], f"/m{n}.py", passing=("t3",)) for n in range(3)]
    tasks.append(task(3, "p", "f3", ["t4"], "/o.py"))
    (p,) = mix_figures(tasks).projects
    assert p.over.startswith("3 of 4 tasks fail the same 2 tests, while other tests pass; a share of 25% needs 4 "
                             "distinct sets, and the run found no other set its changes fail")
    assert p.over.endswith("; 2 distinct failing sets in all") and p.too_few_sets


def test_a_shared_failing_set_where_a_spread_was_possible_is_not_excused():
    """Four sets could have met the share: the report says the dataset did not balance it."""
    tasks = [task(n, "p", f"f{n}", ["t1"], f"/m{n}.py", passing=("t9",)) for n in range(3)]
    tasks += [task(3 + n, "p", "g", [f"t{2 + n}"], f"/o{n}.py", passing=("t9",)) for n in range(3)]
    (p,) = mix_figures(tasks).projects
    assert p.failing_sets == 4 and not p.too_few_sets
    assert p.over.startswith("3 of 6 tasks fail the same 1 test, while other tests pass: the run found no narrower "
                             "change this often, and the dataset did not balance it")
