"""The typed per-phase timings: one record from the attempt to the dataset, and the cost ratio."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from cligym.invert.summary import summarize
from cligym.layout import RunDir
from cligym.models.io import save
from cligym.models.run import Summary
from cligym.models.task import Candidate
from cligym.models.timing import PHASES, Phase, PhaseSeconds
from tests.unit.fake_engine import gold_env


def test_every_phase_is_a_field_and_nothing_else_is():
    assert list(PHASES) == list(get_args(Phase)) == list(PhaseSeconds.model_fields)
    with pytest.raises(ValidationError):
        PhaseSeconds.model_validate({"bulid": 1.0})  # a misspelt phase is refused, not a new key


def test_time_adds_up_and_records_hold_the_phases_entered_only():
    seconds = PhaseSeconds()
    seconds.add("build", 1.5)
    seconds.add("build", 0.5)
    seconds.add("verifier", 0.25)
    assert seconds.build == 2.0 and seconds.verifier == 0.25
    assert list(seconds.spent()) == ["build", "verifier"]
    assert set(seconds.model_dump()) == {"build", "verifier"}
    both = PhaseSeconds.summed([seconds, PhaseSeconds(build=1.0, difficulty=3.0)])
    assert (both.build, both.difficulty, both.total()) == (3.0, 3.0, pytest.approx(6.0 + seconds.verifier))
    assert both.per(2).build == 1.5 and PhaseSeconds().per(0).total() == 0


def test_a_candidate_of_before_the_record_loads_its_dict():
    old = Candidate.model_validate({"id": "0000", "attempt": 0, "seed": 0, "status": "discarded",
                                    "seconds": {"build": 2.0, "run": 1.0}})
    assert old.seconds.spent() == {"build": 2.0, "run": 1.0}


def test_the_summary_says_where_the_time_went_and_its_multiple_of_the_limit(tmp_path):
    run = RunDir(tmp_path)
    tests = ["t.py::a", "t.py::b"]
    for attempt, (status, seconds) in enumerate([("verified", {"build": 3.0, "run": 1.0}),
                                                 ("verified", {"build": 2.0, "difficulty": 4.0}),
                                                 ("discarded", {"build": 2.0})]):
        save(Candidate(id=f"{attempt:04d}", attempt=attempt, seed=0, status=status, sample=tests,
                       discard_kind=None if status == "verified" else "no_failure", seconds=seconds,
                       instance_id=f"p.op.{attempt}" if status == "verified" else None),
             run.candidate(attempt))
    summary = summarize(run, gold_env(tests), 3, run_seconds=0.5)
    assert summary.phase_seconds.spent() == {"build": 7.0, "run": 1.0, "difficulty": 4.0}
    assert summary.seconds_per_verified == 6.0  # every attempt's 12 s over 2 tasks
    assert (summary.limit_seconds, summary.cost_ratio) == (1.0, 6.0)
    again = Summary.model_validate_json(summary.model_dump_json(by_alias=True))
    assert again.phase_seconds == summary.phase_seconds
    unmeasured = summarize(run, gold_env(tests), 3)
    assert unmeasured.limit_seconds is None and unmeasured.cost_ratio is None
