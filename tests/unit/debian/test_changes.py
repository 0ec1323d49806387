"""The Debian world's change planners (no engine): what each targets, what it never touches,
how its repair works offline. Their effect on a real gold is pinned by
tests/engine/debian/test_changes_debian.py."""

from __future__ import annotations

import random

from cligym.invert.debian_changes import CHANGES
from cligym.invert.debian_site import DebianSite
from cligym.models.debian_probe import DebianProbe, DebianTouch, Program

LIB = "/usr/lib/x86_64-linux-gnu/libyaml-0.so.2.0.9"
MODULE = "/usr/lib/x86_64-linux-gnu/perl5/5.36/YAML/XS.pm"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
BASE_LIB = "/usr/lib/x86_64-linux-gnu/libbase.so.1.0"


def _probe() -> DebianProbe:
    return DebianProbe(
        gold_image_id="sha256:x", workdir="/usr/src/pkg",
        tests={"smoke": DebianTouch(files=[MODULE, "/etc/pkg.conf"], objects=[LIB, LIBC, BASE_LIB],
                                    programs=[Program(path="/usr/bin/perl", real="/usr/bin/perl")],
                                    shadows={"/usr/local/share/perl/5.36.0/YAML/XS.pm": MODULE,
                                             "/usr/src/pkg/lib/YAML/XS.pm": MODULE}),
               "other": DebianTouch(files=["/usr/bin/prove"])},
        owners={LIB: ["libyaml-0-2:amd64"], MODULE: ["libyaml-libyaml-perl"], LIBC: ["libc6:amd64"],
                BASE_LIB: ["libbase1:amd64"], "/etc/pkg.conf": ["libyaml-libyaml-perl"], "/usr/bin/perl": ["perl"]},
        versions={"libyaml-0-2:amd64": "0.2.5-1", "libyaml-libyaml-perl": "0.86-1", "libc6:amd64": "2.36-9",
                  "libbase1:amd64": "1.0-1", "perl": "5.36.0-7"},
        conffiles={"libyaml-libyaml-perl": ["/etc/pkg.conf"]},
        core=["libc6:amd64"],
        repository={"libyaml-0-2": "0.2.5-1", "libyaml-libyaml-perl": "0.86-1", "libc6": "2.36-9"},
        ldconfig={LIB: ["libyaml-0.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libyaml-0.so.2"],
                  LIBC: ["libc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6"]})


TESTS = ["smoke::t/1.t::1 - loads", "smoke::t/2.t::1 - dumps", "other::t/3.t::1 - x"]


def _plans(name: str) -> list:
    site = DebianSite(_probe(), TESTS)
    return [CHANGES[name](site, random.Random(seed)) for seed in range(40)]


def test_a_removed_or_emptied_file_is_one_a_reinstall_from_the_image_brings_back():
    """Never the core (libc), never a conffile (a reinstall keeps a deleted one away), never a
    package the in-image repository lacks (the base image's own: no offline reinstall)."""
    for name in ("packaged_file_removed", "packaged_file_emptied"):
        plans = _plans(name)
        targets = {plan.changes[0].places[0] for plan in plans}
        assert targets == {LIB, MODULE}, name
        for plan in plans:
            change = plan.changes[0]
            assert change.category == "package_files" and plan.touching == TESTS[:2]
            assert "apt-get install --reinstall" in change.repair[0]
            assert "libyaml-0-2:amd64=0.2.5-1" in change.repair[0] or "libyaml-libyaml-perl=0.86-1" in change.repair[0]


def test_a_removed_soname_link_is_the_links_path_and_ldconfig_repairs_it():
    plans = _plans("soname_link_removed")
    assert {p.changes[0].dockerfile[0] for p in plans} == {"RUN rm -f /usr/lib/x86_64-linux-gnu/libyaml-0.so.2"}
    assert all(p.changes[0].repair == ["ldconfig"] and p.touching == TESTS[:2] for p in plans)


def test_a_shadow_goes_where_a_search_missed_outside_the_work_tree():
    plans = _plans("search_path_shadow")
    assert {p.changes[0].places[0] for p in plans} == {"/usr/local/share/perl/5.36.0/YAML/XS.pm"}
    change = plans[0].changes[0]
    assert change.dockerfile == ["RUN mkdir -p /usr/local/share/perl/5.36.0/YAML && "
                                 ": > /usr/local/share/perl/5.36.0/YAML/XS.pm"]
    assert change.repair == ["rm -f /usr/local/share/perl/5.36.0/YAML/XS.pm"]


def test_no_target_no_plan():
    bare = DebianSite(DebianProbe(gold_image_id="sha256:x", workdir="/w", tests={"t": DebianTouch()}), ["t"])
    assert all(planner(bare, random.Random(0)) is None for planner in CHANGES.values())


def test_a_scenario_puts_a_blocker_before_a_packaged_file_fault_and_repairs_it_first():
    from cligym.invert.debian_changes import SCENARIOS

    site = DebianSite(_probe(), TESTS)
    for name, planner in SCENARIOS.items():
        plan = planner(site, random.Random(3))
        fault, blocker = plan.changes
        assert plan.scenario == name and (fault.role, blocker.role) == ("fault", "blocker")
        assert fault.name in ("packaged_file_removed", "packaged_file_emptied", "program_not_executable",
                              "package_force_removed")
        assert plan.repair_order == [1, 0] and plan.touching == TESTS[:2]
        if name != "pinned_removal":  # its naive install names no version (its own test)
            assert [step.lines for step in plan.naive] == [fault.repair]
    bare = DebianSite(DebianProbe(gold_image_id="sha256:x", workdir="/w", tests={"t": DebianTouch()}), ["t"])
    assert all(planner(bare, random.Random(0)) is None for planner in SCENARIOS.values())


def test_a_blocker_of_the_faults_path_names_that_path():
    """The dpkg blockers are made for the file the fault removed: the path-exclude rule
    covers its folder, the diversion is of the file itself, and each repair undoes only it."""
    from cligym.invert.debian_changes import slimmed_image, stale_diversion

    site = DebianSite(_probe(), TESTS)
    excluded = slimmed_image(site, random.Random(3))
    fault, rule = excluded.changes
    folder = fault.places[0].rsplit("/", 1)[0]
    assert f"path-exclude={folder}/*" in rule.dockerfile[0] and rule.repair == [f"rm -f {rule.places[0]}"]
    diverted = stale_diversion(site, random.Random(3))
    fault, diversion = diverted.changes
    assert fault.places[0] in diversion.dockerfile[0] and "--add" in diversion.dockerfile[0]
    assert diversion.repair[0].startswith("dpkg-divert --local --rename --remove ")
    assert diversion.repair[0].endswith(fault.places[0])


def test_every_planner_is_drawn_with_its_family():
    from cligym.invert.debian_changes import CHANGES, PLANNERS, SCENARIOS

    assert set(PLANNERS) == set(CHANGES) | set(SCENARIOS)
    resisting = {p.family for p in PLANNERS.values() if p.resists_sweeper}
    assert len(resisting) >= 3  # no one family can make a run's hard tasks alone (its share is 25%)


def test_cligym_scenarios_lists_both_worlds_with_what_undoes_them():
    import json

    from typer.testing import CliRunner

    from cligym.cli.app import app
    from cligym.invert.debian_changes import PLANNERS

    done = CliRunner().invoke(app, ["scenarios", "--json"])
    assert done.exit_code == 0, done.output
    rows = {r["name"]: r for r in json.loads(done.output)}
    assert {r["world"] for r in rows.values()} == {"python", "debian"}
    for name, planner in PLANNERS.items():
        row = rows[name]
        assert row["world"] == "debian" and row["family"] == planner.family and row["incident"]
        assert row["incident"].endswith(".") and row["incident"].count("(") == row["incident"].count(")")
        assert (row["undone_by"] == []) == planner.resists_sweeper


def test_a_target_the_attempt_already_missed_with_is_not_drawn_again():
    """A fault whose state broke nothing (a program the tests never really run) leaves its
    path out of the attempt's later draws, so a package with one program is not tried eight
    times over."""
    site = DebianSite(_probe(), TESTS)
    first = [CHANGES[name](site, random.Random(1)) for name in CHANGES]
    places = {plan.changes[0].places[0] for plan in first if plan is not None}
    again = DebianSite(_probe(), TESTS, missed=places)
    for seed in range(20):
        for name, planner in CHANGES.items():
            plan = planner(again, random.Random(seed))
            assert plan is None or plan.changes[0].places[0] not in places, name


def test_a_path_the_runs_tasks_broke_or_whose_tests_they_fail_is_drawn_less_often():
    """The Debian site spreads a run's tasks as the Python one does: a file whose tests a
    task already fails, or that a task broke, gives way to one of a new symptom."""
    probe = _probe()
    probe.tests["other"] = DebianTouch(files=["/usr/share/pkg/data.yml"])
    probe.owners["/usr/share/pkg/data.yml"] = ["libyaml-libyaml-perl"]
    site = DebianSite(probe, TESTS)
    site.failing = {frozenset(TESTS[:2]): 2}  # two tasks fail smoke's tests
    picks = [CHANGES["packaged_file_removed"](site, random.Random(seed)).changes[0].places[0] for seed in range(200)]
    assert picks.count("/usr/share/pkg/data.yml") > 0.9 * len(picks)
    site.failing, site.used = {}, {"/usr/share/pkg/data.yml": 2}
    picks = [CHANGES["packaged_file_removed"](site, random.Random(seed)).changes[0].places[0] for seed in range(200)]
    assert picks.count("/usr/share/pkg/data.yml") < 0.1 * len(picks)


def test_a_forced_removal_takes_a_package_the_tests_load_and_the_reinstall_brings_it_back():
    plans = [p for p in _plans("package_force_removed") if p is not None]
    removed = {p.changes[0].dockerfile[0].split(" && ")[0] for p in plans}
    assert removed == {"RUN dpkg --remove --force-depends libyaml-0-2:amd64",
                       "RUN dpkg --remove --force-depends libyaml-libyaml-perl"}
    # dpkg's former database is a copy of gold's: it goes with the removal
    assert all(p.changes[0].dockerfile[0].endswith(" && rm -f /var/lib/dpkg/status-old") for p in plans)
    for plan in plans:
        assert plan.touching == TESTS[:2] and "apt-get install --reinstall" in plan.changes[0].repair[0]


def test_a_pinned_removal_turns_the_versionless_install_away_and_removes_the_pin_first():
    from cligym.invert.debian_changes import SCENARIOS

    plan = SCENARIOS["pinned_removal"](DebianSite(_probe(), TESTS), random.Random(3))
    fault, pin = plan.changes
    package = fault.dockerfile[0].split(" && ")[0].rsplit(" ", 1)[1].split(":")[0]
    assert pin.role == "blocker" and f"Package: {package}" in pin.dockerfile[0]
    assert "Pin-Priority: -1" in pin.dockerfile[0] and "\n" not in pin.dockerfile[0]  # one Dockerfile line
    assert plan.repair_order == [1, 0] and pin.repair == ["rm -f /etc/apt/preferences.d/local-pins"]
    naive = plan.naive[0].lines[0]
    assert naive.endswith(f" {package}") and "=" not in naive.rsplit(" ", 1)[1]  # no version: what an admin types


def test_the_packages_of_the_checks_own_tools_are_spared_as_the_core_is():
    """A library the listing's find loads (through libselinux) is never a target: breaking it
    would break the checks, not the task."""
    spared = DebianSite(_probe(), TESTS, spared={"libyaml-0-2"})
    for name in ("packaged_file_removed", "packaged_file_emptied", "soname_link_removed", "package_force_removed"):
        for seed in range(20):
            plan = CHANGES[name](spared, random.Random(seed))
            assert plan is None or LIB not in plan.changes[0].places and "libyaml-0-2" not in plan.changes[0].repair[0]


def test_a_path_whose_single_fault_the_sweeper_undid_leaves_the_draw_of_the_planners_it_undoes():
    """A run that drew the same swept target over and over (a package with one library the
    tests load) spent its attempts for nothing: once the sweeper undid a fault of a path,
    the planners the sweeper undoes draw it no more, while those that resist it (a fault
    behind a blocker) still may."""
    from types import SimpleNamespace

    from tests.unit.fake_engine import gold_env

    from cligym.invert.debian_changes import PLANNERS
    from cligym.invert.debian_search import DebianDegrader
    from cligym.models.task import AppliedChange, Candidate

    swept = AppliedChange(name="packaged_file_removed", category="package_files", target=LIB, symptom="s", hint="h",
                          offline="o", places=[LIB])
    ctx = SimpleNamespace(debian=_probe(), gold=gold_env(TESTS), sample_size=40, sweeper_share_full=lambda: False)
    for resists in (False, True):  # each tier alone: the resisting planners are drawn first
        degrader = DebianDegrader([p for p in PLANNERS.values() if p.resists_sweeper is resists], attempts=8)
        degrader.tools = set()
        degrader.seen(Candidate(id="0000", attempt=0, seed=0, status="discarded", discard_kind="sweeper_solves",
                                operators=[swept]))
        assert degrader.swept == {LIB}
        faults = set()
        for attempt in range(1, 60):
            proposal = degrader.propose(ctx, attempt, random.Random(attempt), [])  # type: ignore[arg-type]
            if proposal.discard is None:
                faults.add(next(c.applied.places[0] for c in proposal.changes if c.applied.role == "fault"))
        assert faults and (LIB in faults) is resists, resists


def test_a_run_whose_attempts_see_the_whole_suite_stops_after_one_spent_attempt():
    """Every attempt of a small suite samples all of it: the site is the same each time, so
    one attempt whose tries found nothing new ends the run (three for a sampled suite)."""
    from types import SimpleNamespace

    from tests.unit.fake_engine import gold_env

    from cligym.invert.debian_changes import PLANNERS
    from cligym.invert.debian_search import run_degrader
    from cligym.invert.scenario_search import PATIENCE

    whole = SimpleNamespace(sample_size=200, gold=gold_env(TESTS))
    sampled = SimpleNamespace(sample_size=2, gold=gold_env(TESTS))
    assert run_degrader(list(PLANNERS.values()), 8, whole).patience == 1  # type: ignore[arg-type]
    assert run_degrader(list(PLANNERS.values()), 8, sampled).patience == PATIENCE > 1  # type: ignore[arg-type]
