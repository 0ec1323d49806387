"""The screen with its retries, and minimality (decoy operators dropped, evidence
recorded), on the real markupsafe gold image with hand-made operators whose effect is
known: an empty ``html`` module on PYTHONPATH fails the four tests that use
``html`` (a part of the suite), and touching an unrelated file breaks nothing (a decoy).
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from cligym.invert.context import open_run
from cligym.invert.operators import Target
from cligym.invert.parallel import run_attempts
from cligym.invert.proposal import Degrader
from cligym.invert.search import proposal_of
from cligym.models.io import load
from cligym.models.task import Candidate, Task
from cligym.ui import Reporter
from tests.unit.test_invert_quality import _Shadow, _target, _Touch


class _Scripted(Degrader):
    """A degrader proposing what the test scripted, in order, on the whole suite (a script
    may come with the share of failing tests it takes: ``accept(fail_fraction, late)``)."""

    seed_prefix = "test"

    def __init__(self, scripts) -> None:
        self.scripts = list(scripts)
        self.misses: list[str] = []
        self._accept = None

    def accept(self, proposal, failing, late) -> bool:
        return self._accept is None or self._accept(len(failing) / len(proposal.sample), late)

    def propose(self, ctx, attempt, rng, tries):
        if tries:  # the attempt's last miss: the one since the last proposal
            self.misses.append((tries[-1].proposal.name, tries[-1].fail_fraction))
        script = self.scripts.pop(0)(ctx)
        pairs, self._accept = script if isinstance(script, tuple) else (script, None)
        proposal = proposal_of(list(ctx.gold.tests), pairs)
        proposal.retry = bool(self.scripts)  # the last script: no other proposal to try after a miss
        return proposal


def _html(ctx) -> Target:
    return _target("/usr/local/lib/stray/html.py", [t for t in ctx.gold.tests if "escaping" in t or "unescape" in t])


class _Hang(_Shadow):
    """A start-up hook on PYTHONPATH that sleeps: every Python process hangs."""

    name = "test_hang"
    symptom = "Python never starts."
    shows: ClassVar[tuple[str, ...]] = (r"timed out",)
    CONTENT = r"import time\ntime.sleep(3600)\n"


def test_screen_retries_and_minimality_drops_a_decoy(runtime, gold_envs, gold_copy, tmp_path):
    gold = gold_envs("markupsafe==3.0.2")
    gold_copy("markupsafe==3.0.2", tmp_path / "gold")
    ctx = open_run(tmp_path / "gold", tmp_path / "run", runtime, Reporter(), 2, seed=0, operators=["test"],
                   sample_size=200, max_operators=3)
    decoy = ("/etc/cligym-decoy", list(gold.tests)[:3])
    degrader = _Scripted([
        lambda ctx: [(_Touch(), _target(*decoy))],  # breaks nothing: the screen misses, the attempt tries again
        lambda ctx: ([(_Shadow(), _html(ctx))], lambda ff, late: False),  # breaks, but the degrader refuses it
        lambda ctx: [(_Shadow(), _html(ctx))],
        lambda ctx: [(_Shadow(), _html(ctx)), (_Touch(), _target(*decoy))],  # a composite with a decoy
    ])
    with runtime.session(gold.image) as session:
        ctx.gold_session = session
        run_attempts(ctx, degrader, 2)
    first = load(Candidate, ctx.run.candidate(0))
    assert first.status == "verified", first.reason
    shadow = "test_shadow|/usr/local/lib/stray/html.py"
    assert first.screened == ["test_touch|/etc/cligym-decoy", shadow]
    assert first.refused == {shadow: first.fail_fraction} and 0 < first.fail_fraction < 1
    assert degrader.misses == [("test_touch", None), ("test_shadow", first.fail_fraction)]
    second = load(Candidate, ctx.run.candidate(1))
    # the decoy is dropped and the smaller state is the first attempt's: a duplicate
    assert second.decoys == ["test_touch|/etc/cligym-decoy"]
    assert second.status == "discarded" and second.discard_kind == "duplicate", second.reason
    task = load(Task, ctx.run.task_record(first.instance_id))
    assert [(a.name, a.necessary) for a in task.applied] == [("test_shadow", True)]
    assert set(task.applied[0].fixes) == set(task.FAIL_TO_PASS) and 0 < task.fail_fraction < 1
    assert task.offline_fair is True


@pytest.mark.slow  # a long case: it waits out the limit
def test_a_state_whose_tests_hang_is_a_miss_after_a_limit_from_golds_own_timing(runtime, gold_envs, gold_copy,
                                                                                 tmp_path, monkeypatch):
    """A start-up hook that sleeps hangs every test: the run is stopped after the limit
    gold's suite time gives (the floor lowered here) and the attempt tries another state."""
    from cligym.harness import testrun

    monkeypatch.setattr(testrun, "HANG_FLOOR", 10.0)
    gold = gold_envs("markupsafe==3.0.2")
    assert testrun.hang_timeout(gold.test_seconds) < 10.0 + 5 * 5  # markupsafe's suite takes well under 5 s
    assert testrun.hang_timeout([]) == testrun.HANG_CAP == testrun.hang_timeout([10_000.0])
    gold_copy("markupsafe==3.0.2", tmp_path / "gold")
    ctx = open_run(tmp_path / "gold", tmp_path / "run", runtime, Reporter(), 1, seed=0, operators=["test"],
                   sample_size=200, max_operators=3)
    degrader = _Scripted([
        lambda ctx: [(_Hang(), _target("/usr/local/lib/hang/sitecustomize.py", list(ctx.gold.tests)))],
        lambda ctx: [(_Shadow(), _html(ctx))],
    ])
    with runtime.session(gold.image) as session:
        ctx.gold_session = session
        run_attempts(ctx, degrader, 1)
    first = load(Candidate, ctx.run.candidate(0))
    assert first.status == "verified", first.reason
    assert degrader.misses[0] == ("test_hang", None)
    assert [a.name for a in first.operators] == ["test_shadow"]
