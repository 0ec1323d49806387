"""The attempt pipeline on the fake engine (no Docker): every way an attempt ends, what it
tells its degrader, and the run loop around it."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from cligym.errors import CligymError, EngineUnavailable
from cligym.invert import beside as beside_module
from cligym.invert.context import RunContext, without_flaky
from cligym.invert.parallel import run_attempts
from cligym.invert.pipeline import MAX_SWEPT_TRIES, MAX_TRIES, make_attempt
from cligym.invert.proposal import Change, Degrader, Proposal, Try
from cligym.layout import RunDir
from cligym.models.io import load
from cligym.models.run import FlakyTests
from cligym.models.task import AppliedChange, Candidate, RepairStep, Task
from cligym.models.testrun import TestResult, TestRun
from cligym.models.verify import Verification
from tests.unit.fake_engine import FakeEngine, Line, gold_env, undo

TESTS = ["t.py::a", "t.py::b", "t.py::c", "t.py::d"]


def change(name: str, role: str = "fault", touching: tuple[str, ...] = ()) -> Change:
    return Change(AppliedChange(name=name, category="c", target=f"/{name}", symptom="s", hint="h", role=role,
                                  offline="o"), [f"RUN {name}"], undo(f"RUN {name}"), list(touching))


def proposal(*changes: Change, **fields) -> Proposal:
    name = "+".join(c.applied.name for c in changes)
    return Proposal(**{"sample": TESTS, "name": name, "changes": list(changes), **fields})


class Scripted(Degrader):
    """Proposes what the test scripted, in order; records what it was told."""

    seed_prefix = "test"

    def __init__(self, *proposals: Proposal, accept=None) -> None:
        self.proposals, self.accept_rule = list(proposals), accept
        self.told: list[list[Try]] = []
        self.accepted: list[tuple[float, bool]] = []
        self.seen_attempts: list[int] = []

    def propose(self, ctx, attempt, rng, tries):
        self.told.append(list(tries))
        return self.proposals.pop(0)

    def accept(self, proposal, failing, late):
        fail_fraction = round(len(failing) / len(proposal.sample), 4)
        self.accepted.append((fail_fraction, late))
        return self.accept_rule is None or self.accept_rule(fail_fraction)

    def seen(self, candidate):
        self.seen_attempts.append(candidate.attempt)

    def derived_solution(self, ctx, report):
        return "#!/bin/sh\n# derived\n"


def _ctx(engine: FakeEngine, folder, **fields) -> RunContext:
    return RunContext(gold=gold_env(TESTS), probe=SimpleNamespace(files={}), runtime=engine, run=RunDir(folder),
                      seed=0, sample_size=10, **fields)


@pytest.fixture
def run(tmp_path, monkeypatch):
    """``run(engine, degrader, attempt=0, **context fields)``: the attempt's Candidate, with
    the run context."""
    def attempt(engine: FakeEngine, degrader, number: int = 0, **fields) -> tuple[Candidate, RunContext]:
        ctx = _ctx(engine.install(monkeypatch), tmp_path / "run", **fields)
        return make_attempt(ctx, degrader, number), ctx
    return attempt


def test_a_state_that_fails_some_tests_is_verified_and_saved(run):
    engine = FakeEngine({"RUN x": Line(breaks={"t.py::b"})})
    candidate, ctx = run(engine, Scripted(proposal(change("x"))))
    assert candidate.status == "verified", candidate.reason
    assert (candidate.FAIL_TO_PASS, candidate.fail_fraction) == (["t.py::b"], 0.25)
    assert [(a.necessary, a.fixes) for a in candidate.operators] == [(True, ["t.py::b"])]
    task = load(Task, ctx.run.task_record(candidate.instance_id))
    assert task.operators == ["x"] and task.PASS_TO_PASS == ["t.py::a", "t.py::c", "t.py::d"]
    assert task.extra_bytes == 42 and task.difficulty is not None and task.offline_fair
    assert "undo RUN x" in task.solution and ctx.run.issues(candidate.instance_id).exists()
    assert engine.removed and candidate.screened == [] and set(candidate.seconds.spent()) >= {"build", "run"}


class Beside(FakeEngine):
    """A fake whose difficulty measure, measured ``beside`` the verifier's checks, can only
    end after they ended (it waits for them to start, then for their end), and a clock each
    of them sets as it ends."""

    def __init__(self, *args, beside: bool, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.now, self.checking = 0.0, threading.Event()
        if not beside:  # (measured first: nothing to wait for)
            self.checking.set()
            self.now = 10.0

    def check_broken_state(self, *args, **kwargs):
        self.checking.set()
        verification = super().check_broken_state(*args, **kwargs)
        self.now = 10.0
        return verification

    def measure(self, *args, **kwargs):
        assert self.checking.wait(timeout=30), "the measure did not run beside the checks"
        difficulty = super().measure(*args, **kwargs)
        while self.now < 10.0:  # (the checks end first: the attempt then waits for the measure)
            time.sleep(0.01)
        self.now = 13.0
        return difficulty


def test_beside_the_checks_the_same_task_is_made_and_its_seconds_are_its_wall_time(run, tmp_path, monkeypatch):
    """A run that measures the difficulty beside the verifier's checks makes the same
    candidate and task as one that measures it first; the difficulty phase holds only the
    wait it added after the checks (each second of the attempt counted once)."""
    made = []
    for beside in (False, True):
        engine = Beside({"RUN x": Line(breaks={"t.py::b"})}, beside=beside).install(monkeypatch)
        if beside:
            monkeypatch.setattr(beside_module, "time", SimpleNamespace(monotonic=lambda clock=engine: clock.now))
        ctx = _ctx(engine, tmp_path / f"run-{beside}", beside=beside)
        candidate = make_attempt(ctx, Scripted(proposal(change("x"))), 0)
        assert candidate.status == "verified", candidate.reason
        made.append((candidate, load(Task, ctx.run.task_record(candidate.instance_id))))
    (first, first_task), (beside_, beside_task) = made
    assert beside_.model_dump(exclude={"seconds"}) == first.model_dump(exclude={"seconds"})
    assert beside_task.model_dump(exclude={"created_at"}) == first_task.model_dump(exclude={"created_at"})
    assert beside_.seconds.difficulty == 3.0


def test_a_degrader_that_gave_up_ends_the_attempt_without_a_build(run):
    engine = FakeEngine()
    candidate, _ = run(engine, Scripted(Proposal(sample=TESTS, discard=("no_target", "nothing to break"))))
    assert (candidate.status, candidate.discard_kind, candidate.reason) == ("discarded", "no_target",
                                                                            "nothing to break")
    assert engine.builds == []


def test_a_screen_miss_is_tried_again_and_the_degrader_is_told_of_it(run):
    engine = FakeEngine({"RUN y": Line(breaks={"t.py::c"})})
    first = proposal(change("x"), screen=["t.py::a"], retry=True)  # x breaks nothing
    degrader = Scripted(first, proposal(change("y"), screen=["t.py::c"], retry=True))
    candidate, _ = run(engine, degrader)
    assert candidate.status == "verified" and candidate.screened == ["x|/x"] and candidate.refused == {}
    assert degrader.told == [[], [Try(first, None)]]
    assert engine.runs[0] == ["t.py::a"] and candidate.sample == TESTS and candidate.seconds.screen > 0


@pytest.mark.parametrize("retry", [True, False])
def test_a_state_that_breaks_nothing_is_a_miss(run, retry):
    degrader = Scripted(*[proposal(change(f"x{i}"), retry=retry) for i in range(MAX_TRIES)])
    candidate, _ = run(FakeEngine(), degrader)
    tries = MAX_TRIES if retry else 1
    assert (candidate.status, candidate.discard_kind) == ("discarded", "no_failure")
    assert candidate.reason == f"no selected test failed in {tries} tries" and len(candidate.screened) == tries
    assert candidate.PASS_TO_PASS == TESTS  # the last try's run is kept
    assert [len(told) for told in degrader.told] == list(range(tries))


def test_states_the_degrader_refuses_are_misses_and_the_last_tries_are_late(run):
    engine = FakeEngine({f"RUN x{i}": Line(breaks=set(TESTS[:3])) for i in range(MAX_TRIES)})
    degrader = Scripted(*[proposal(change(f"x{i}"), retry=True) for i in range(MAX_TRIES)], accept=lambda ff: False)
    candidate, _ = run(engine, degrader)
    assert candidate.discard_kind == "no_failure"
    assert candidate.reason.startswith(f"no state taken in {MAX_TRIES} tries")
    assert candidate.refused == {f"x{i}|/x{i}": 0.75 for i in range(MAX_TRIES)}
    assert [late for _, late in degrader.accepted] == [False] * 5 + [True] * 3
    assert degrader.told[-1][-1].fail_fraction == 0.75


def test_the_policy_of_the_degrader_a_proposal_names_applies(run):
    engine = FakeEngine({"RUN x": Line(breaks={"t.py::a"}), "RUN y": Line(breaks={"t.py::a"})})
    owner = Scripted(accept=lambda ff: False)
    mix = Scripted(proposal(change("x"), retry=True, by=owner), proposal(change("y"), retry=True))
    candidate, _ = run(engine, mix)
    assert candidate.status == "verified" and candidate.refused == {"x|/x": 0.25}
    assert len(owner.accepted) == 1 and len(mix.accepted) == 1


@pytest.mark.parametrize("retry", [True, False])
def test_a_state_that_does_not_build(run, retry):
    engine = FakeEngine({"RUN x": Line(build_fails=True), "RUN y": Line(breaks={"t.py::a"})})
    candidate, _ = run(engine, Scripted(proposal(change("x"), retry=retry), proposal(change("y"))))
    if retry:
        assert candidate.status == "verified" and candidate.screened == ["x|/x"]
    else:
        assert (candidate.discard_kind, candidate.reason) == ("build_failed", "the fake build failed")
        assert candidate.reproduced is None and candidate.seconds.build == 0


def _observed(failing: list[str]) -> TestRun:
    return TestRun(exit_code=1, seconds=1.0, report_found=True,
                   results={t: TestResult(outcome="failed" if t in failing else "passed") for t in TESTS})


def _agent(lines: list[str], failing: list[str]) -> Proposal:
    return Proposal(sample=TESTS, name="agent", dockerfile=lines, observed=_observed(failing), derive_solution=True,
                    keep_tests=True)


def test_the_degraders_own_run_must_be_reproduced_by_gold_plus_delta(run):
    engine = FakeEngine({"RUN z": Line(breaks={"t.py::a", "t.py::d"}), "RUN w": Line(breaks={"t.py::a", "t.py::d"})})
    candidate, _ = run(engine, Scripted(_agent(["RUN z"], ["t.py::a", "t.py::d"])))
    assert candidate.status == "verified" and candidate.reproduced is True and candidate.seconds.rerun > 0
    assert candidate.solution == "#!/bin/sh\n# derived\n" and candidate.operators == []
    other, _ = run(engine, Scripted(_agent(["RUN w"], ["t.py::a"])), 1)
    assert other.discard_kind == "not_reproducible" and other.reproduced is False
    assert other.reason.startswith("gold + ΔD fails 1 more ['t.py::d'] and 0 fewer")


def test_a_reproduction_that_does_not_build_or_hangs_is_discarded(run):
    engine = FakeEngine({"RUN bad": Line(build_fails=True), "RUN hang": Line(hangs=True)})
    unbuilt, _ = run(engine, Scripted(_agent(["RUN bad"], ["t.py::a"])))
    assert unbuilt.discard_kind == "build_failed" and unbuilt.reproduced is False
    assert unbuilt.FAIL_TO_PASS == ["t.py::a"]  # the degrader's own run's
    hung, _ = run(engine, Scripted(_agent(["RUN hang"], ["t.py::a"])), 1)
    assert hung.discard_kind == "not_reproducible" and "hung" in hung.reason


def test_a_hanging_state_is_a_miss(run):
    engine = FakeEngine({"RUN h": Line(hangs=True), "RUN y": Line(breaks={"t.py::b"})})
    candidate, _ = run(engine, Scripted(proposal(change("h"), retry=True), proposal(change("y"))))
    assert candidate.status == "verified" and candidate.screened == ["h|/h"]


def test_a_delta_an_earlier_attempt_made_a_task_of_is_a_duplicate(run):
    engine = FakeEngine({"RUN x": Line(breaks={"t.py::a"}), "RUN y": Line(breaks={"t.py::b"})})
    first, _ = run(engine, Scripted(proposal(change("x"))))
    again, _ = run(engine, Scripted(proposal(change("x"))), 1)
    assert first.status == "verified" and (again.discard_kind, again.reason) == (
        "duplicate", "the same delta as an earlier attempt")
    builds = len(engine.builds)
    retried, _ = run(engine, Scripted(proposal(change("x"), retry=True), proposal(change("y"))), 2)
    assert retried.status == "verified" and retried.screened == ["x|/x"] and len(engine.builds) == builds + 1
    redone, _ = run(engine, Scripted(proposal(change("x"))), 0)  # the same attempt again (a resumed run)
    assert redone.status == "verified"


def test_a_decoy_is_dropped_and_the_smaller_state_checked_from_the_start(run):
    engine = FakeEngine({"RUN x": Line(breaks={"t.py::a"})})
    composite = proposal(change("x", touching=("t.py::a",)), change("decoy", touching=("t.py::b",)), reducible=True)
    candidate, _ = run(engine, Scripted(composite))
    assert candidate.status == "verified" and candidate.decoys == ["decoy|/decoy"]
    assert [a.name for a in candidate.operators] == ["x"] and candidate.dockerfile == ["RUN x"]
    assert engine.builds == [["RUN x", "RUN decoy"], ["RUN x"]]


def test_when_each_repair_alone_suffices_the_first_change_alone_is_checked(run):
    engine = FakeEngine({"RUN p": Line(breaks={"t.py::a"}, with_={"RUN q"}),
                         "RUN q": Line(breaks={"t.py::a"}, with_={"RUN p"})})  # only together
    candidate, _ = run(engine, Scripted(proposal(change("p"), change("q"), reducible=True)))
    assert candidate.decoys == ["q|/q"] and engine.builds[-1] == ["RUN p"]
    assert candidate.discard_kind == "no_failure"  # p alone breaks nothing: the reduced state is a miss


@pytest.mark.parametrize("retry", [True, False])
def test_a_plan_that_cannot_be_reduced_is_not_minimal(run, retry):
    engine = FakeEngine({"RUN x": Line(breaks={"t.py::a"}), "RUN y": Line(breaks={"t.py::b"})})
    candidate, _ = run(engine, Scripted(proposal(change("x"), change("decoy"), retry=retry), proposal(change("y"))))
    if retry:
        assert candidate.status == "verified" and candidate.screened == ["x|/x + decoy|/decoy"]
    else:
        assert candidate.discard_kind == "not_minimal" and candidate.reason.endswith("(decoy)")
        assert [(a.name, a.necessary) for a in candidate.operators] == [("x", True), ("decoy", False)]


@pytest.mark.parametrize("beside", [False, True])
def test_chained_faults_stay_and_a_blocker_stays_when_it_blocks_the_naive_repair(run, beside):
    """The same whether the blocker check runs after leave-one-repair-out or beside it."""
    engine = FakeEngine({"RUN x": Line(breaks={"t.py::a"}), "RUN y": Line(breaks={"t.py::a"}),
                         "RUN guard": Line(blocks=True)})
    naive = [RepairStep(label="naive", lines=["reinstall"])]
    plan = proposal(change("x"), change("y"), change("guard", role="blocker"), naive=naive, repair_order=[2, 1, 0])
    candidate, _ = run(engine, Scripted(plan), beside=beside)
    assert candidate.status == "verified", candidate.reason
    assert [(a.name, a.necessary, a.blocks) for a in candidate.operators] == [
        ("x", True, None), ("y", True, None), ("guard", False, True)]
    weak = proposal(change("x2"), change("idle", role="blocker"), naive=naive)
    engine.lines["RUN x2"] = Line(breaks={"t.py::c"})
    other, _ = run(engine, Scripted(weak), 1, beside=beside)
    assert other.discard_kind == "not_minimal" and other.operators[1].blocks is False


def test_a_state_the_checks_refuse_is_discarded_with_what_was_found(run):
    engine = FakeEngine({"RUN x": Line(breaks={"t.py::a"})},
                        verify=lambda tag, f2p: Verification(ok=False, kind="leak", reason="a copy of the file"))
    candidate, _ = run(engine, Scripted(proposal(change("x"))))
    assert (candidate.discard_kind, candidate.reason) == ("leak", "a copy of the file")
    assert candidate.extra_bytes == 42 and candidate.FAIL_TO_PASS == ["t.py::a"] and candidate.operators[0].necessary


def _left_failing(*tests: str):
    """A verification refusing the first state: ``tests`` still fail after its solution."""
    answers = [Verification(ok=False, kind="not_solvable", reason="still failing", still_failing=list(tests))]
    return lambda tag, f2p: answers.pop(0) if answers else Verification(ok=True)


def test_a_test_a_repair_leaves_failing_and_gold_fails_too_leaves_the_run(run):
    """Flaky on this machine (a timing test under load): the attempt tries again, and the
    run samples the test no more, also when resumed (its folder keeps it)."""
    engine = FakeEngine({"RUN x": Line(breaks={"t.py::b"}), "RUN y": Line(breaks={"t.py::b"})},
                        verify=_left_failing("t.py::d"), flaky_on_gold={"t.py::d"})
    degrader = Scripted(proposal(change("x"), retry=True), proposal(change("y")))
    candidate, ctx = run(engine, degrader)
    assert candidate.status == "verified" and candidate.screened == ["x|/x"], candidate.reason
    assert "t.py::d" not in ctx.gold.tests and "t.py::d" in ctx.gold.flaky
    assert load(FlakyTests, ctx.run.flaky).tests == ["t.py::d"]
    assert without_flaky(gold_env(TESTS), ["t.py::d"]).tests == ["t.py::a", "t.py::b", "t.py::c"]


def test_a_test_found_flaky_leaves_the_tasks_made_before_it_too(run):
    """A task made before the run found a test flaky listed it as PASS_TO_PASS: its record
    drops it then (and its fail fraction follows), so its reward never hangs on it."""
    answers = [Verification(ok=True), Verification(ok=False, kind="not_solvable", reason="still failing",
                                                   still_failing=["t.py::d"])]
    engine = FakeEngine({"RUN x": Line(breaks={"t.py::b"}), "RUN y": Line(breaks={"t.py::a"}),
                         "RUN z": Line(breaks={"t.py::c"})},
                        verify=lambda tag, f2p: answers.pop(0) if answers else Verification(ok=True),
                        flaky_on_gold={"t.py::d"})
    first, ctx = run(engine, Scripted(proposal(change("x"))))
    before = load(Task, ctx.run.task_record(first.instance_id))
    assert "t.py::d" in before.PASS_TO_PASS and before.fail_fraction == 0.25
    second, _ = run(engine, Scripted(proposal(change("y"), retry=True), proposal(change("z"))), 1)
    assert second.status == "verified", second.reason
    after = load(Task, ctx.run.task_record(first.instance_id))
    assert "t.py::d" not in after.PASS_TO_PASS + after.selected_tests
    assert after.FAIL_TO_PASS == ["t.py::b"] and after.fail_fraction == round(1 / 3, 4)


def test_a_test_a_repair_leaves_failing_that_gold_passes_discards_the_state(run):
    engine = FakeEngine({"RUN x": Line(breaks={"t.py::b"})}, verify=_left_failing("t.py::b"))
    candidate, ctx = run(engine, Scripted(proposal(change("x"), retry=True)))
    assert (candidate.status, candidate.discard_kind) == ("discarded", "not_solvable")
    assert ctx.gold.tests == TESTS and not ctx.run.flaky.exists()
    assert engine.runs[-3:] == [["t.py::b"]] * 3  # gold ran the test FLAKY_RUNS times


def test_an_engine_error_discards_the_attempt_and_a_fatal_one_stops_the_run(run):
    def broken(tag, f2p):
        raise CligymError("the container went away")

    engine = FakeEngine({"RUN x": Line(breaks={"t.py::a"})}, verify=broken)
    candidate, _ = run(engine, Scripted(proposal(change("x"))))
    assert (candidate.discard_kind, candidate.reason) == ("error", "the container went away")
    assert candidate.FAIL_TO_PASS == ["t.py::a"] and engine.removed  # the image goes whatever happened

    def gone(tag, f2p):
        raise EngineUnavailable("no engine")

    with pytest.raises(EngineUnavailable):
        run(FakeEngine({"RUN x": Line(breaks={"t.py::a"})}, verify=gone), Scripted(proposal(change("x"))), 1)


def test_the_run_loop_resumes_tells_the_degrader_in_order_and_stops_at_max_tasks(run, tmp_path, monkeypatch):
    engine = FakeEngine({f"RUN x{i}": Line(breaks={TESTS[i % 4]}) for i in range(6)}).install(monkeypatch)
    ctx = _ctx(engine, tmp_path / "loop")
    first = Scripted(*[proposal(change(f"x{i}")) for i in range(2)])
    summary = run_attempts(ctx, first, 4, max_tasks=2)
    assert first.seen_attempts == [0, 1] and summary.verified == 2
    assert not ctx.run.candidate(2).exists()
    resumed = Scripted(*[proposal(change(f"x{i}")) for i in range(2, 4)])
    run_attempts(ctx, resumed, 4)
    assert resumed.seen_attempts == [0, 1, 2, 3] and len(resumed.told) == 2
    assert [load(Candidate, ctx.run.candidate(a)).status for a in range(4)] == ["verified"] * 4


@pytest.mark.parametrize("beside", [False, True])
@pytest.mark.parametrize("share", [None, 0.1, 0.5])
def test_states_the_sweeper_repairs_are_kept_while_their_share_stays_under_the_runs(share, beside, tmp_path,
                                                                                    monkeypatch):
    """A run with a sweeper share keeps a task the task-blind sweeper repairs only while
    such tasks stay at most that share of its tasks; a run without one keeps them all. The
    same whether the difficulty is measured before the verifier's checks or beside them."""
    engine = FakeEngine({f"RUN {n}": Line(breaks={"t.py::b"}) for n in "xyz"}, swept=True).install(monkeypatch)
    ctx = _ctx(engine, tmp_path / "run", sweeper_share=share, beside=beside)
    first = make_attempt(ctx, Scripted(proposal(change("x"))), 0)  # one of one: all of the run's tasks
    engine.swept = False
    hard = make_attempt(ctx, Scripted(proposal(change("y"))), 1)
    engine.swept = True
    second = make_attempt(ctx, Scripted(proposal(change("z"))), 2)  # with one other task: half of them
    assert hard.status == "verified", hard.reason
    if share is None:
        assert first.status == second.status == "verified"
        return
    assert (first.status, first.discard_kind) == ("discarded", "sweeper_solves")
    assert first.reason == (f"the task-blind sweeper repairs it, and with it more than {share:.0%} of the run's "
                            "tasks would be such")
    assert second.status == ("verified" if share == 0.5 else "discarded")
    assert len(ctx.run.task_records()) == (2 if share == 0.5 else 1)


@pytest.mark.parametrize("beside", [False, True])
def test_past_the_sweeper_share_a_swept_state_is_a_miss_found_before_the_verifier(beside, tmp_path, monkeypatch):
    """Once the run has its share of states the task-blind sweeper repairs, the sweeper is
    asked before the verifier's checks (also in a run that measures beside them): a state
    it repairs never reaches them, and a degrader that may try again is told
    (``Try.swept``) and proposes another."""
    engine = FakeEngine({f"RUN {n}": Line(breaks={TESTS[0]}) for n in "xy"}, swept={"RUN x"}).install(monkeypatch)
    ctx = _ctx(engine, tmp_path / "run", sweeper_share=0.1, beside=beside)
    degrader = Scripted(proposal(change("x"), retry=True), proposal(change("y"), retry=True))
    candidate = make_attempt(ctx, degrader, 0)
    assert candidate.status == "verified", candidate.reason
    assert [t.swept for t in degrader.told[1]] == [True] and candidate.screened == ["x|/x"]
    assert len(engine.verified) == 1 and engine.images[engine.verified[0]] == ["RUN y"]
    assert not load(Task, ctx.run.task_records()[0]).difficulty.sweeper_solves


def test_an_attempt_ends_after_its_second_swept_state(tmp_path, monkeypatch):
    """Each swept state costs the whole difficulty measure: an attempt tries two at most."""
    engine = FakeEngine({f"RUN x{i}": Line(breaks={TESTS[0]}) for i in range(8)}, swept=True).install(monkeypatch)
    ctx = _ctx(engine, tmp_path / "run", sweeper_share=0.1)
    candidate = make_attempt(ctx, Scripted(*[proposal(change(f"x{i}"), retry=True) for i in range(8)]), 0)
    assert (candidate.status, candidate.discard_kind) == ("discarded", "sweeper_solves")
    assert candidate.reason.startswith(f"{MAX_SWEPT_TRIES} of its states the task-blind sweeper repairs")
    assert len(candidate.screened) == MAX_SWEPT_TRIES and not engine.verified


@pytest.mark.parametrize("patience", [0, 2])
def test_the_run_stops_once_its_last_attempts_found_nothing_new_to_break(patience, tmp_path, monkeypatch):
    """A degrader with a patience stops the run after that many attempts in a row ended with
    nothing new to break (a task between them starts the count again); with none (an
    agent's) every attempt is made. A resumed run stops at the same place."""
    engine = FakeEngine({"RUN x": Line(breaks={TESTS[0]})}).install(monkeypatch)
    ctx = _ctx(engine, tmp_path / "run")
    nothing = [Proposal(sample=TESTS, discard=("worn_symptom", "worn")) for _ in range(6)]
    degrader = Scripted(nothing[0], proposal(change("x")), *nothing[1:])
    degrader.patience = patience
    summary = run_attempts(ctx, degrader, 7)
    made = 2 + patience if patience else 7
    assert summary.attempts == made and summary.exhausted == bool(patience)
    assert not ctx.run.candidate(made).exists() if patience else ctx.run.candidate(6).exists()
    again = Scripted()
    again.patience = patience
    assert run_attempts(ctx, again, 7).attempts == made and again.told == []


def test_a_run_whose_states_the_sweeper_keeps_repairing_stops_after_its_patience(tmp_path, monkeypatch):
    """Past the run's sweeper share, an attempt whose state the sweeper repairs found nothing
    the run can take: after ``patience`` of them in a row the run stops, as after misses."""
    engine = FakeEngine({f"RUN x{i}": Line(breaks={TESTS[0]}) for i in range(8)}, swept=True).install(monkeypatch)
    ctx = _ctx(engine, tmp_path / "run", sweeper_share=0.1)
    degrader = Scripted(*[proposal(change(f"x{i}")) for i in range(8)])
    degrader.patience = 3
    summary = run_attempts(ctx, degrader, 8)
    assert summary.attempts == 3 and summary.exhausted and summary.discard_reasons == {"sweeper_solves": 3}


def test_a_reduction_to_changes_the_sweeper_undoes_by_declaration_is_a_miss_before_its_measure(
        tmp_path, monkeypatch):
    """Minimality can leave of a composite only changes the sweeper undoes by their
    declaration (the resisting one a decoy): while the run has its share of swept tasks that
    smaller state is not built and measured again, the degrader proposes another."""
    engine = FakeEngine({"RUN u": Line(breaks={TESTS[0]}), "RUN y": Line(breaks={TESTS[1]})}).install(monkeypatch)
    ctx = _ctx(engine, tmp_path / "run", sweeper_share=0.1)

    class Declares(Scripted):
        def undone(self, proposal):
            return [c.applied.name for c in proposal.changes] == ["u"]

    composite = proposal(change("u", touching=(TESTS[0],)), change("decoy", touching=(TESTS[0],)), reducible=True,
                         retry=True)
    degrader = Declares(composite, proposal(change("y"), retry=True))
    candidate = make_attempt(ctx, degrader, 0)
    assert candidate.status == "verified" and candidate.dockerfile == ["RUN y"], candidate.reason
    assert engine.builds == [["RUN u", "RUN decoy"], ["RUN y"]]  # "RUN u" alone never built
    assert [t.swept for t in degrader.told[1]] == [False]
    ctx.sweeper_share = None  # no share: the smaller state is checked as before
    again = make_attempt(ctx, Declares(composite), 1)
    assert engine.builds[-1] == ["RUN u"] and again.status == "verified"
