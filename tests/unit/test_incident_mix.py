"""The default mix (no engine): who proposes each try, and the order scenarios are tried."""

from __future__ import annotations

import random
from collections import Counter
from types import SimpleNamespace

from cligym.invert.context import RunContext
from cligym.invert.scenario_search import HIDDEN_WEIGHT, MISSES_PER_SCENARIO, MixedDegrader, ScenarioDegrader
from cligym.invert.scenarios.base import HABITS, Site
from cligym.models.task import Candidate
from cligym.invert.proposal import Change, Proposal, Try
from cligym.invert.scenarios import REGISTRY
from cligym.models.probe import Probe
from cligym.models.task import AppliedChange, RepairStep


def _changes(n: int) -> list[Change]:
    return [Change(AppliedChange(name=f"op{i}", category="c", target=f"/t{i}", symptom="", hint=""), [f"RUN {i}"],
                   RepairStep(label="c", lines=[f"undo {i}"])) for i in range(n)]


class _Fixed:
    """A degrader that always answers the same way, and counts its calls."""

    seed_prefix = "fixed"

    def __init__(self, name: str, changes: int = 0, discard: bool = False) -> None:
        self.name, self.changes, self.discard, self.calls = name, changes, discard, 0

    def propose(self, ctx, attempt, rng, tries):
        self.calls += 1
        self.tries = tries
        if self.discard:
            return Proposal(sample=["t"], discard=("no_target", f"{self.name} has nothing"))
        return Proposal(sample=["t"], name=self.name, changes=_changes(self.changes))

    def seen(self, candidate):
        pass


def _attempts(mix: MixedDegrader, who) -> list[int]:
    return [a for a in range(40) if mix.of(a) is who][:3]


def test_a_composite_turn_offering_one_operator_goes_to_a_scenario():
    scenarios, composites = _Fixed("scenario", 2), _Fixed("composite", 1)
    mix = MixedDegrader(scenarios, composites, seed=0)
    attempt = _attempts(mix, composites)[0]
    assert mix.propose(None, attempt, random.Random(0), []).name == "scenario"


def test_a_scenario_turn_with_no_target_goes_to_a_composite_then_to_a_single_fault():
    mix = MixedDegrader(_Fixed("scenario", discard=True), _Fixed("composite", 2), seed=0)
    attempt = _attempts(mix, mix.scenarios)[0]
    assert mix.propose(None, attempt, random.Random(0), []).name == "composite"
    lone = MixedDegrader(_Fixed("scenario", discard=True), _Fixed("single", 1), seed=0)
    assert lone.propose(None, attempt, random.Random(0), []).name == "single"  # nothing else is left
    empty = MixedDegrader(_Fixed("scenario", discard=True), _Fixed("none", discard=True), seed=0)
    assert empty.propose(None, attempt, random.Random(0), []).discard is not None


def test_a_proposal_of_the_mix_names_its_degrader_which_is_told_only_of_its_own_misses():
    scenarios, composites = _Fixed("scenario", 2), _Fixed("composite", 1)
    mix = MixedDegrader(scenarios, composites, seed=0)
    attempt = _attempts(mix, composites)[0]
    first = mix.propose(None, attempt, random.Random(0), [])
    assert first.by is scenarios  # the composite offered one operator: the scenario's proposal, its policy
    mine, theirs = Try(first, 0.9), Try(Proposal(sample=["t"], name="other", by=composites))
    again = mix.propose(None, attempt, random.Random(0), [mine, theirs])
    assert again.by is scenarios and scenarios.tries == [mine] and composites.tries == [theirs]


def test_the_mix_is_mostly_scenarios_and_decided_by_seed_and_attempt_alone():
    mix = MixedDegrader(_Fixed("s"), _Fixed("c"), seed=3)
    again = MixedDegrader(_Fixed("s"), _Fixed("c"), seed=3)
    turns = [mix.of(a) is mix.scenarios for a in range(400)]
    assert turns == [again.of(a) is again.scenarios for a in range(400)]
    assert 0.8 <= sum(turns) / len(turns) <= 0.97


def test_scenarios_a_sweeper_cannot_undo_are_tried_first_and_capped_ones_last():
    degrader = ScenarioDegrader(list(REGISTRY.values()), attempts=30)
    order = degrader._order(random.Random(1))
    resistant = [s.resists_sweeper for s in order]
    assert resistant == sorted(resistant, reverse=True) and any(resistant) and not all(resistant)
    first = order[0].name
    degrader.made[first] = degrader.cap
    assert degrader._order(random.Random(1))[-1].name == first


def test_scenarios_that_hide_their_cause_are_drawn_first_more_often():
    """Among the scenarios a sweeper cannot undo, the ones whose mechanism shows no injected
    path lead the order more often than their share of the pool (HIDDEN_WEIGHT)."""
    degrader = ScenarioDegrader(list(REGISTRY.values()), attempts=30)
    resistant = [s for s in REGISTRY.values() if s.resists_sweeper]
    hidden = sum(1 for s in resistant if not s.shows_cause)
    assert 0 < hidden < len(resistant)
    firsts = [degrader._order(random.Random(seed))[0] for seed in range(2000)]
    assert all(s.resists_sweeper for s in firsts)
    share = sum(1 for s in firsts if not s.shows_cause) / len(firsts)
    weighted = HIDDEN_WEIGHT * hidden / (HIDDEN_WEIGHT * hidden + len(resistant) - hidden)
    assert share > hidden / len(resistant) + 0.1 and abs(share - weighted) < 0.05


def test_a_scenario_leaves_the_draw_after_its_plans_missed_three_times_in_an_attempt():
    degrader = ScenarioDegrader(list(REGISTRY.values()), attempts=30)
    first = degrader._order(random.Random(2))[0]
    misses = Counter({first.name: MISSES_PER_SCENARIO - 1})
    assert first in degrader._order(random.Random(2), misses)
    misses[first.name] += 1
    assert first not in degrader._order(random.Random(2), misses)
    assert first not in degrader._order(random.Random(2), out={first.name})  # it had no target in the attempt


def test_a_scenario_proposes_from_the_attempts_own_misses_and_forgets_them_when_it_ends():
    from tests.unit.fake_engine import gold_env
    from tests.unit.test_scenario_plans import GOLD, PROBE

    probe = Probe.model_validate_json(PROBE.read_text())
    ctx = RunContext(gold=gold_env(list(probe.tests)), probe=probe, runtime=None, run=None, seed=0, sample_size=40,
                     gold_session=SimpleNamespace(get_file=GOLD.get, get_archive=lambda path: None))
    degrader = ScenarioDegrader(list(REGISTRY.values()), attempts=30)
    first = degrader.propose(ctx, 5, random.Random(1), [])
    assert first.changes and first.retry and first.by is None
    again = degrader.propose(ctx, 5, random.Random(1), [Try(first)] * (MISSES_PER_SCENARIO - 1))
    assert again.name == first.name  # the same draw: one miss short of leaving it
    other = degrader.propose(ctx, 5, random.Random(1), [Try(first)] * MISSES_PER_SCENARIO)
    assert other.name != first.name
    assert 5 in degrader._untargeted  # the scenarios with no target in the attempt's samples
    degrader.seen(Candidate(id="0005", attempt=5, seed=0, status="discarded"))
    assert 5 not in degrader._untargeted


def _verified(name: str, failing: list[str], places: list[str], n: int = 0) -> Candidate:
    change = AppliedChange(name="x", category="package_files", target=places[0], symptom="s", hint="h",
                             offline="o", places=places)
    return Candidate(id=f"{n:04d}", attempt=n, seed=0, status="verified", instance_id=f"p.{name}.{n:010d}",
                     operators=[change], FAIL_TO_PASS=failing)


def test_a_family_that_made_its_share_is_out_of_the_draw():
    """FAMILY_SHARE: the four pip-configuration scenarios share one mechanism, so once their
    family has made a quarter of the run's tasks none of them is drawn again (the attempt
    goes to another family, or to a composite)."""
    degrader = ScenarioDegrader(list(REGISTRY.values()), attempts=24)
    pip = [s for s in REGISTRY.values() if s.family == "pip_configuration"]
    assert len(pip) >= 3 and degrader.family_cap == 6
    for n in range(degrader.family_cap):
        degrader.seen(_verified(pip[n % len(pip)].name, [f"t{n}"], [f"/m{n}.py"], n))
    for seed in range(50):
        order = degrader._order(random.Random(seed))
        assert order and "pip_configuration" not in {s.family for s in order}


def test_a_worn_failing_set_is_known():
    degrader = ScenarioDegrader(list(REGISTRY.values()), attempts=8)
    assert degrader.f2p_cap == 2
    for n in range(2):
        degrader.seen(_verified("ghost_plugin", ["a::t1"], ["/site/pkg/mod.py"], n))
    assert degrader.worn(["a::t1"]) and not degrader.worn(["a::t1", "a::t2"])
    assert degrader.broken["/site/pkg/mod.py"] == 2


def test_a_worn_set_is_held_back_once_the_run_fails_another():
    """A suite whose every task fails one set keeps making them (its tests may reach the
    project only through one door); once another set is made, the worn one is not taken,
    neither predicted by a plan nor measured on a built state."""
    degrader = ScenarioDegrader(list(REGISTRY.values()), attempts=8)
    proposal = Proposal(sample=["a::t1", "a::t2"], name="ghost_plugin")
    for n in range(3):
        degrader.seen(_verified("ghost_plugin", ["a::t1"], [f"/site/pkg/m{n}.py"], n))
    assert degrader.worn(["a::t1"]) and not degrader.held_back(["a::t1"])
    assert degrader.accept(proposal, ["a::t1"], late=False)
    degrader.seen(_verified("ghost_plugin", ["a::t2"], ["/site/pkg/other.py"], 3))
    assert degrader.held_back(["a::t1"]) and not degrader.accept(proposal, ["a::t1"], late=True)
    assert degrader.accept(proposal, ["a::t2"], late=False) and degrader.accept(proposal, ["a::t1", "a::t2"], False)


def test_an_attempt_whose_every_plan_is_worn_ends_as_such_once_the_suite_offers_another(monkeypatch):
    from tests.unit.fake_engine import gold_env
    from tests.unit.test_scenario_plans import GOLD, PROBE

    probe = Probe.model_validate_json(PROBE.read_text())
    ctx = RunContext(gold=gold_env(list(probe.tests)), probe=probe, runtime=None, run=None, seed=0, sample_size=40,
                     gold_session=SimpleNamespace(get_file=GOLD.get, get_archive=lambda path: None))
    degrader = ScenarioDegrader(list(REGISTRY.values()), attempts=30)
    monkeypatch.setattr(degrader, "worn", lambda touching: True)
    degrader.seen(_verified("ghost_plugin", ["a::t1"], ["/site/pkg/m.py"], 0))
    taken = degrader.propose(ctx, 5, random.Random(1), [])
    assert taken.discard is None and taken.changes  # one set so far: the worn plan is the fallback
    degrader.seen(_verified("ghost_plugin", ["a::t2"], ["/site/pkg/n.py"], 1))
    ended = degrader.propose(ctx, 6, random.Random(1), [])
    assert ended.discard is not None and ended.discard[0] == "worn_symptom" and not ended.changes


def test_pick_prefers_a_target_whose_tests_no_task_fails():
    class _Sub:
        def __init__(self, path, touching):
            self.path, self.size, self.touching = path, 10, touching

    site = Site.__new__(Site)
    site._subs, site.used = [_Sub("/a.py", ["t1"]), _Sub("/b.py", ["t2"])], {}
    site.failing = {frozenset(["t1"]): 2}
    picks = [site.pick(random.Random(seed)).path for seed in range(500)]
    assert picks.count("/b.py") > 0.95 * len(picks)


def test_pick_prefers_a_path_no_earlier_task_broke():
    class _Sub:
        def __init__(self, path, size=10):
            self.path, self.size, self.touching = path, size, ["t"]

    site = Site.__new__(Site)
    site._subs, site.used, site.failing = [_Sub("/a.py"), _Sub("/b.py")], {"/a.py": 2}, {}
    picks = [site.pick(random.Random(seed)).path for seed in range(500)]
    assert picks.count("/b.py") > 0.95 * len(picks)


def test_every_scenario_names_its_family_and_habits_it_resists():
    families = {s.family for s in REGISTRY.values()}
    assert len(families) >= 5
    for s in REGISTRY.values():
        assert s.family and set(s.resists) <= set(HABITS), s.name
        assert s.resists_sweeper == (set(s.resists) == set(HABITS))


def test_in_the_default_mix_a_composite_is_held_to_the_runs_symptoms_too():
    """A chained composite failing a set of tests the run's tasks fail often enough, while
    they fail another, is refused as a scenario's plan is: one rule for the run's symptoms."""
    from cligym.invert.operators import get
    from cligym.invert.search import degrader

    mix = degrader("mixed", get(), list(REGISTRY.values()), 3, 8, seed=0)
    for n in range(2):
        mix.seen(_verified("ghost_plugin", ["a::t1"], [f"/site/pkg/m{n}.py"], n))
    proposal = Proposal(sample=["a::t1", "a::t2", "a::t3", "a::t4"], name="op1+op2")
    assert mix.composites.accept(proposal, ["a::t1"], late=True)  # one set so far
    mix.seen(_verified("ghost_plugin", ["a::t2"], ["/site/pkg/other.py"], 2))
    assert not mix.composites.accept(proposal, ["a::t1"], late=True)
    assert mix.composites.accept(proposal, ["a::t3"], late=True)


def test_pick_weighs_a_set_of_tests_not_its_files():
    """A large dependency whose hundreds of files the same tests import weighs as one
    symptom: once a task fails its tests, another set is likelier, few files though it has."""
    class _Sub:
        def __init__(self, path, touching):
            self.path, self.size, self.touching = path, 10, touching

    site = Site.__new__(Site)
    big = [_Sub(f"/big/m{n}.py", ["c1", "c2"]) for n in range(300)]
    site._subs, site.used = [*big, _Sub("/small.py", [f"p{n}" for n in range(6)])], {}
    site.failing = {frozenset(["c1", "c2", "c3"]): 1}  # a task fails the big one's tests (and one more)
    picks = [site.pick(random.Random(seed)).path for seed in range(500)]
    assert picks.count("/small.py") > 0.5 * len(picks)


def test_a_degrader_whose_predictions_are_coarse_tries_a_worn_plan_and_lets_the_measured_set_decide(monkeypatch):
    """The Debian world predicts a whole autopkgtest test's inner tests: a plan predicted to
    fail a worn set may fail a fresh one, so it is tried (last), and ``accept`` judges the
    set its state fails."""
    from tests.unit.fake_engine import gold_env
    from tests.unit.test_scenario_plans import GOLD, PROBE

    from cligym.invert.debian_search import DebianDegrader

    probe = Probe.model_validate_json(PROBE.read_text())
    ctx = RunContext(gold=gold_env(list(probe.tests)), probe=probe, runtime=None, run=None, seed=0, sample_size=40,
                     gold_session=SimpleNamespace(get_file=GOLD.get, get_archive=lambda path: None))
    degrader = ScenarioDegrader(list(REGISTRY.values()), attempts=30)
    degrader.predicts_exactly = DebianDegrader.predicts_exactly
    monkeypatch.setattr(degrader, "worn", lambda touching: touching != ["fresh"])
    degrader.seen(_verified("ghost_plugin", ["a::t1"], ["/site/pkg/m.py"], 0))
    degrader.seen(_verified("ghost_plugin", ["a::t2"], ["/site/pkg/n.py"], 1))
    taken = degrader.propose(ctx, 6, random.Random(1), [])
    assert taken.discard is None and taken.changes
    assert not degrader.accept(taken, ["a::t1"], late=False) and degrader.accept(taken, ["fresh"], late=False)


def test_a_scenario_whose_state_the_sweeper_undid_leaves_the_draw_while_the_share_is_full(monkeypatch):
    """One that makes new paths each time (a ghost plugin's metadata) escapes the swept
    paths: the scenario itself is not drawn while the run has its share of swept tasks."""
    from tests.unit.fake_engine import gold_env
    from tests.unit.test_scenario_plans import GOLD, PROBE

    probe = Probe.model_validate_json(PROBE.read_text())
    ctx = RunContext(gold=gold_env(list(probe.tests)), probe=probe, runtime=None, run=None, seed=0, sample_size=40,
                     gold_session=SimpleNamespace(get_file=GOLD.get, get_archive=lambda path: None))
    full = [True]
    monkeypatch.setattr(ctx, "sweeper_share_full", lambda: full[0])
    degrader = ScenarioDegrader(list(REGISTRY.values()), attempts=30)
    first = degrader.propose(ctx, 5, random.Random(1), [])
    other = degrader.propose(ctx, 5, random.Random(1), [Try(first, swept=True)])
    assert other.name != first.name and degrader.swept_scenarios == {first.name}
    assert degrader.propose(ctx, 6, random.Random(1), []).name != first.name  # later attempts too
    full[0] = False  # the share has room again
    assert degrader.propose(ctx, 7, random.Random(1), []).name == first.name
