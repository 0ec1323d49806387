"""What makes the search's tasks true and varied: target choice, learning, the share cap,
the screen with its retries, and minimality (decoy operators dropped, evidence recorded).

The choosing and learning are pure and tested on hand-made operators; the screen and
minimality are tested on the real markupsafe gold image with hand-made operators whose
effect is known: an empty ``html`` module on PYTHONPATH fails the four tests that use
``html`` (a part of the suite), and touching an unrelated file breaks nothing (a decoy).
"""

from __future__ import annotations

import random
from typing import ClassVar

from cligym.invert.learning import Learnt
from cligym.invert.operators import Operator, Target, TargetData
from cligym.invert.search import Chooser, _adds, proposal_of, restrict
from cligym.models.task import Candidate


class _Shadow(Operator):
    name = "test_shadow"
    category = "environment_variables"
    symptom = "The standard library's html module lacks what the tests use."
    hint = "Which html module Python imports."
    shows: ClassVar[tuple[str, ...]] = (r"html",)
    offline = "remove the stray module"
    CONTENT = ""  # what the stray module holds

    def apply(self, target):
        folder = target.path.rpartition("/")[0]
        return [f"RUN mkdir -p {folder} && printf '{self.CONTENT}' > {target.path}", f"ENV PYTHONPATH={folder}"]

    def solution(self, target):
        return [f"rm -f {target.path}"]


class _Touch(Operator):
    name = "test_touch"
    category = "system_files"
    symptom = "An SSL certificate error (PEM lib)."
    hint = "Certificates."
    shows: ClassVar[tuple[str, ...]] = (r"PEM|certificate",)
    offline = "remove the file"

    def apply(self, target):
        return [f"RUN touch {target.path}"]

    def solution(self, target):
        return [f"rm -f {target.path}"]


def _target(path: str, touching: list[str]) -> Target:
    return Target(path=path, data=TargetData(), touching=touching)


def _verified(i: int, ff: float, *pairs: tuple[str, str], sample: int = 10, fixes=()) -> Candidate:
    ops = [{"name": n, "category": "c", "target": t, "symptom": "", "hint": "", "necessary": True,
            "fixes": list(fixes)} for n, t in pairs]
    return Candidate(id=f"{i:04d}", attempt=i, seed=0, status="verified", instance_id=str(i), fail_fraction=ff,
                     operators=ops, sample=[f"t{k}" for k in range(sample)])


def _chooser(learnt: Learnt, options, cap: int = 5) -> Chooser:
    chooser = Chooser(files=None, cap=cap, learnt=learnt, options=options)
    chooser._prepare = lambda op, target: target  # no gold files needed
    return chooser


def test_restrict_cuts_touching_to_the_sample_and_drops_untouched_targets():
    op = _Touch()
    options = [(op, [_target("/a", ["t1", "t2"]), _target("/b", ["t3"])])]
    cut = restrict(options, ["t2", "t4"])
    assert [(o.name, [(t.path, t.touching) for t in ts]) for o, ts in cut] == [("test_touch", [("/a", ["t2"])])]
    assert restrict(options, ["t9"]) == []


def test_a_further_composite_target_must_chain_on_the_earlier_ones_tests():
    """Composites chain: a further change fails tests an earlier one fails too, so repairing
    one reveals the other (leave-one-repair-out, not this choice, rules out decoys)."""
    assert _adds(_target("/a", ["t1"]), set())
    assert _adds(_target("/a", ["t2", "t3"]), {"t1", "t2"})
    assert _adds(_target("/a", ["t1"]), {"t1", "t2"})
    assert _adds(_target("/a", ["t1", "t2", "t3"]), {"t1"})
    assert not _adds(_target("/a", ["t3"]), {"t1", "t2"})  # unrelated: two tasks in one


def test_learning_weighs_operators_by_what_broke_and_remembers_tried_pairs():
    learnt = Learnt()
    miss = Candidate(id="0000", attempt=0, seed=0, status="discarded", discard_kind="no_failure",
                     screened=["test_touch|/a", "test_touch|/b"])
    learnt.seen(miss)
    assert learnt.weight(_Touch()) < learnt.weight(_Shadow())
    assert {"test_touch|/a", "test_touch|/b"} <= learnt.tried
    made = Candidate(id="0001", attempt=1, seed=0, status="verified", instance_id="x",
                     operators=[{"name": "test_shadow", "category": "c", "target": "/s", "symptom": "", "hint": ""}])
    learnt.seen(made)
    assert learnt.made["test_shadow"] == 1 and learnt.breaks["test_shadow"] == 1


def test_an_operator_at_its_share_cap_is_chosen_only_when_nothing_else_is_left():
    learnt = Learnt()
    learnt.made["test_shadow"] = 2
    chooser = Chooser(files=None, cap=2, learnt=learnt)
    chooser._prepare = lambda op, target: target  # no gold files needed
    both = [(_Shadow(), [_target("/s", ["t1"])]), (_Touch(), [_target("/a", ["t2"])])]
    for seed in range(20):
        picked = chooser.choose(random.Random(seed), both, 1, 10)
        assert [op.name for op, _ in picked] == ["test_touch"]
    alone = chooser.choose(random.Random(0), both[:1], 1, 10)
    assert [op.name for op, _ in alone] == ["test_shadow"]


def test_a_proposal_knows_its_parts_and_keeps_a_subset():
    pairs = [(_Shadow(), _target("/s", ["t1"])), (_Touch(), _target("/a", ["t2"]))]
    proposal = proposal_of(["t1", "t2"], pairs)
    parts = [c.part for c in proposal.changes]
    assert parts == [["RUN mkdir -p  && printf '' > /s", "ENV PYTHONPATH="], ["RUN touch /a"]] and proposal.retry
    assert proposal.dockerfile == parts[0] + parts[1] and proposal.screen == ["t1", "t2"]
    smaller = proposal.keep_only([0])
    assert smaller.dockerfile == parts[0] and [a.name for a in smaller.applied] == ["test_shadow"]
    assert smaller.screen == ["t1"] and smaller.name == "test_shadow"
    assert "rm -f /a" not in smaller.solution


def test_refused_states_and_composite_parts_are_remembered_as_breaking():
    learnt = Learnt()
    learnt.seen(Candidate(id="0000", attempt=0, seed=0, status="discarded", discard_kind="no_failure",
                          screened=["test_touch|/a", "test_shadow|/s"], refused={"test_shadow|/s": 0.9}))
    assert learnt.breaking == {"test_shadow|/s": 0.9} and learnt.spare() == ["test_shadow|/s"]
    # too broad to take: it does not raise its operator's weight
    assert learnt.breaks["test_shadow"] == 0 and learnt.tries["test_shadow"] == 1
    learnt.seen(_verified(1, 0.3, ("test_touch", "/b"), ("test_shadow", "/t"), fixes=["t1"]))
    # each necessary part of a composite broke at least the tests only it fails
    assert learnt.breaking["test_touch|/b"] == 0.1 and learnt.partial_pairs() == ["test_shadow|/t", "test_touch|/b"]
    assert learnt.fails["test_touch|/b"] == {"t1"}
    assert learnt.used == {"test_touch|/b + test_shadow|/t"}
    learnt.seen(_verified(2, 0.2, ("test_touch", "/b")))
    assert learnt.breaking["test_touch|/b"] == 0.2 and "test_touch|/b" not in learnt.spare()


def test_known_pairs_come_back_narrowest_first_and_combined_only_in_new_combinations():
    learnt = Learnt()
    options = [(_Shadow(), [_target("/s", ["t1"]), _target("/w", ["t1", "t2", "t3"])]),
               (_Touch(), [_target("/a", ["t2"]), _target("/b", ["t3", "t4"])])]
    chooser = _chooser(learnt, options)
    learnt.breaking.update({"test_shadow|/w": 1.0, "test_touch|/a": 0.1, "test_touch|/b": 0.2, "test_shadow|/s": 0.1})
    learnt.used.add("test_shadow|/s")
    pick = chooser.spare(["t1", "t2", "t3", "t4"], partial=True)
    assert [(op.name, t.key, t.touching) for op, t in pick] == [("test_touch", "/a", ["t2"])]
    assert chooser.spare(["t1", "t3"], partial=True)[0][1].key == "/b"  # /a touches no sampled test
    learnt.used.update({"test_touch|/a", "test_touch|/b"})
    assert chooser.spare(["t1", "t2", "t3"], partial=True) == []  # the broad one only when asked
    assert chooser.spare(["t1", "t2", "t3"], partial=False)[0][1].key == "/w"
    learnt.made["test_touch"] = 5  # at its cap: its pairs are not reused
    assert chooser.spare(["t1", "t2", "t3", "t4"], partial=False)[0][0].name == "test_shadow"


def test_known_pairs_combine_into_chains_only_in_new_combinations():
    """A combination's pairs fail some of the same tests (repairing one reveals the other);
    the broad pair stays out, and a combination made once is not made again."""
    learnt = Learnt()
    options = [(_Shadow(), [_target("/s", ["t1"]), _target("/w", ["t1", "t2", "t3"]), _target("/x", ["t2"])]),
               (_Touch(), [_target("/a", ["t1", "t2"]), _target("/b", ["t2", "t4"]), _target("/c", ["t4"])])]
    chooser = _chooser(learnt, options)
    learnt.breaking.update({"test_shadow|/w": 1.0, "test_shadow|/s": 0.1, "test_shadow|/x": 0.1,
                            "test_touch|/a": 0.2, "test_touch|/b": 0.2, "test_touch|/c": 0.1})
    seen = set()
    for seed in range(40):
        pairs = chooser.combined(random.Random(seed), ["t1", "t2", "t3", "t4"], 2)
        assert len(pairs) == 2 and [op.order for op, _ in pairs] == sorted(op.order for op, _ in pairs)
        touched = [set(t.touching) for _, t in pairs]
        assert touched[0] & touched[1]
        seen.add(" + ".join(f"{op.name}|{t.key}" for op, t in pairs))
    assert "test_shadow|/w" not in " ".join(seen) and len(seen) >= 3
    learnt.used.update(seen)
    for seed in range(5):
        again = chooser.combined(random.Random(seed), ["t1", "t2", "t3", "t4"], 2)
        assert " + ".join(f"{op.name}|{t.key}" for op, t in again) not in seen


def test_combinations_go_by_the_tests_seen_failing_where_known():
    """Both targets are imported by every test (predicted to touch all): they may chain;
    once each is seen failing its own tests, they combine only if those overlap."""
    learnt = Learnt()
    every = ["t1", "t2", "t3", "t4"]
    options = [(_Shadow(), [_target("/s", every)]), (_Touch(), [_target("/a", every)])]
    chooser = _chooser(learnt, options)
    learnt.breaking.update({"test_shadow|/s": 0.25, "test_touch|/a": 0.5})
    assert len(chooser.combined(random.Random(0), every, 2)) == 2  # by prediction they overlap
    learnt.fails.update({"test_shadow|/s": {"t1"}, "test_touch|/a": {"t2", "t3"}})
    assert chooser.combined(random.Random(0), every, 2) == []  # seen failing apart: unrelated
    learnt.fails["test_touch|/a"] = {"t1", "t2"}
    pairs = chooser.combined(random.Random(0), every, 2)
    assert sorted((op.name, t.touching) for op, t in pairs) == [("test_shadow", ["t1"]), ("test_touch", ["t1", "t2"])]


def test_names_a_project_reaches_only_inside_functions_come_first():
    """Removing such a name from a dependency fails the tests that call those functions,
    not every import of the project."""
    from cligym.invert.operators.dependencies import project_references

    source = (
        "import dep\n"
        "from dep.core import Eager\n"
        "BASE = dep.Base\n"
        "def f():\n"
        "    from dep.util import Lazy\n"
        "    return dep.helper(Lazy)\n"
    )
    refs = project_references([source], ["dep"])
    assert refs[:2] == [("dep", "helper"), ("dep.util", "Lazy")]
    assert set(refs[2:]) == {("dep", "Base"), ("dep.core", "Eager")}


def test_broad_states_are_taken_only_within_their_share_of_the_run():
    learnt = Learnt()
    assert learnt.accept(0.2, False) and not learnt.accept(1.0, False)  # alone it would be 100% broad
    for i, ff in enumerate([1.0, 0.1, 0.2]):
        learnt.seen(Candidate(id=f"{i:04d}", attempt=i, seed=0, status="verified", instance_id=str(i),
                              fail_fraction=ff))
    assert not learnt.accept(0.9, False)  # 2 broad of 4 would pass 35%
    learnt.seen(Candidate(id="0003", attempt=3, seed=0, status="verified", instance_id="3", fail_fraction=0.0))
    learnt.seen(Candidate(id="0004", attempt=4, seed=0, status="verified", instance_id="4", fail_fraction=0.3))
    assert learnt.accept(0.9, False)  # 2 broad of 6 fit
    assert learnt.accept(0.9, True)  # the attempt's last tries take it
    assert learnt.accept(0.5, False)


def test_an_operator_the_sweeper_undid_is_not_proposed_while_the_run_has_its_share_of_such():
    """Every change of a state the task-blind sweeper repairs is one it undoes: while the
    run has its share of such tasks, the operator's other targets would be swept too, each
    at the cost of a whole difficulty measure, so neither fresh nor known pairs of it come."""
    learnt = Learnt()
    options = [(_Shadow(), [_target("/s", ["t1"]), _target("/u", ["t1"])]), (_Touch(), [_target("/a", ["t2"])])]
    chooser = _chooser(learnt, options)
    learnt.missed(["test_shadow|/s"], None, swept=True)  # a try the sweeper repaired
    learnt.breaking["test_shadow|/u"] = 0.1
    assert learnt.swept == {"test_shadow"}
    chooser.avoid = frozenset(learnt.swept)
    for seed in range(20):
        assert [op.name for op, _ in chooser.choose(random.Random(seed), options, 1, 10)] == ["test_touch"]
        assert [op.name for op, _ in chooser.again(random.Random(seed), options, 1, 10)] == ["test_touch"]
    assert chooser.spare(["t1", "t2"], partial=True) == []
    assert chooser.choose(random.Random(0), options[:1], 1, 10) == []  # nothing else: nothing (no sweep)
    chooser.avoid = frozenset()  # the share has room again: it may come back
    assert chooser.spare(["t1", "t2"], partial=True)[0][1].key == "/u"
    learnt.seen(Candidate(id="0001", attempt=1, seed=0, status="discarded", discard_kind="sweeper_solves",
                          operators=[{"name": "test_touch", "category": "c", "target": "/a", "symptom": "",
                                      "hint": ""}]))
    assert learnt.swept == {"test_shadow", "test_touch"}


def test_a_proposal_of_operators_the_sweeper_undoes_by_declaration_alone_is_not_made():
    """``Operator.undone_by`` predicts a sweep before any: while the run has its share of
    swept tasks (``Chooser.undone`` set), no proposal is made of such operators alone, but
    such an operator still comes beside one that resists (a composite the sweeper cannot
    fully undo), and every declared habit is one of the sweeper's."""
    learnt = Learnt()
    options = [(_Shadow(), [_target("/s", ["t1"]), _target("/u", ["t1"])]), (_Touch(), [_target("/a", ["t1"])])]
    chooser = _chooser(learnt, options)
    chooser.undone = frozenset({"test_shadow"})
    for seed in range(20):
        assert [op.name for op, _ in chooser.choose(random.Random(seed), options, 1, 10)] == ["test_touch"]
        both = chooser.choose(random.Random(seed), options, 2, 10)
        assert sorted(op.name for op, _ in both) == ["test_shadow", "test_touch"], both
    assert chooser.choose(random.Random(0), options[:1], 1, 10) == []
    assert chooser.choose(random.Random(0), options[:1], 2, 10) == []  # only it: swept as well
    # an undone first pick that nothing resisting chains on (other tests): resisting ones alone
    apart = [options[0], (_Touch(), [_target("/a", ["t2"])])]
    for seed in range(20):
        assert [op.name for op, _ in chooser.choose(random.Random(seed), apart, 2, 10)] == ["test_touch"]
    learnt.breaking["test_shadow|/u"] = 0.1
    assert chooser.spare(["t1"], partial=True) == []
    chooser.undone = frozenset()
    assert chooser.spare(["t1"], partial=True)[0][1].key == "/u"
    assert [op.name for op, _ in chooser.choose(random.Random(0), options[:1], 1, 10)] == ["test_shadow"]


def test_every_declared_undoing_habit_is_one_of_the_sweepers():
    from cligym.invert.operators import get
    from cligym.invert.scenarios.base import HABITS

    declared = {op.name: op.undone_by for op in get() if op.undone_by}
    assert declared and set(declared.values()) <= set(HABITS), declared
