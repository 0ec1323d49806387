"""The real search on real gold environments; every kept task re-checked independently."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cligym.harness.probe import load_or_probe
from cligym.invert.search import invert
from cligym.issue import check_issues
from cligym.models.io import load, save
from cligym.models.issue import TaskIssues
from cligym.models.run import Summary
from cligym.models.task import Candidate, Task
from cligym.verify.checks import recheck_task


def _gold_dir(tmp_path_factory, gold):
    path = tmp_path_factory.mktemp("golddir")
    save(gold, path / "gold.json")
    return path


def _run_and_recheck(runtime, gold, gold_dir, run_dir, attempts, seed):
    summary = invert(gold_dir, run_dir, attempts=attempts, seed=seed, runtime=runtime)
    _recheck(runtime, gold, gold_dir, run_dir, attempts, summary)
    return summary


def _recheck(runtime, gold, gold_dir, run_dir, attempts, summary, from_scratch=None):
    assert summary.attempts == attempts
    candidates = sorted((run_dir / "candidates").glob("*.json"))
    assert len(candidates) == attempts
    tasks = sorted((run_dir / "tasks").glob("*/instance.json"))
    assert len(tasks) == summary.verified
    probe = load_or_probe(runtime, gold, gold_dir)
    for number, path in enumerate(tasks):
        task = load(Task, path)
        assert task.FAIL_TO_PASS and set(task.FAIL_TO_PASS).isdisjoint(task.PASS_TO_PASS)
        assert task.image_name == gold.image and task.dockerfile and task.solution
        assert set(task.errors) == set(task.FAIL_TO_PASS)
        if from_scratch is None or number < from_scratch:
            verification = recheck_task(runtime, gold, probe.files, task)  # (a)-(d), from scratch
            assert verification.ok, f"{task.instance_id}: {verification.kind} {verification.reason}"
        # true and fair: every change necessary (or a checked blocker), the texts state only
        # what was observed
        assert task.applied and all((a.necessary and a.fixes) or a.blocks for a in task.applied), task.applied
        assert task.difficulty is not None and task.difficulty.k >= 1
        assert task.offline_fair is True
        assert check_issues(task, load(TaskIssues, path.parent / "issues.json")) == []
    for path in candidates:
        c = load(Candidate, path)
        assert c.status == "verified" or c.discard_kind, c


def test_search_makes_verified_tasks(runtime, gold_envs, markupsafe_run):
    """The shared markupsafe run (4 attempts, seed 1): every task's records checked, two of them
    re-checked from scratch (``cligym verify`` re-checks another in test_export)."""
    gold, run = gold_envs("markupsafe==3.0.2"), markupsafe_run / "run"
    summary = load(Summary, run / "summary.json")
    _recheck(runtime, gold, markupsafe_run / "gold", run, 4, summary, from_scratch=2)
    assert summary.verified >= 3, summary
    data = json.loads((run / "summary.json").read_text())
    assert data["yield"] == summary.yield_ and "discard_reasons" in data and data["phase_seconds"]["build"] > 0
    # the cost as a multiple of the physical limit, measured in the same run
    assert summary.cost_ratio == pytest.approx(summary.seconds_per_verified / summary.limit_seconds, abs=0.1)


@pytest.mark.slow
def test_search_makes_verified_tasks_on_h11(runtime, gold_envs, tmp_path_factory, tmp_path):
    gold = gold_envs("h11==0.16.0")
    gold_dir = _gold_dir(tmp_path_factory, gold)
    summary = _run_and_recheck(runtime, gold, gold_dir, tmp_path / "run", attempts=6, seed=1)
    assert summary.verified >= 3, summary


@pytest.mark.slow  # the same, interrupted by SIGTERM and resumed, is in test_signals (default run)
def test_same_seed_same_attempts_and_resume(runtime, gold_envs, tmp_path_factory, tmp_path):
    gold = gold_envs("markupsafe==3.0.2")
    gold_dir = _gold_dir(tmp_path_factory, gold)
    first = invert(gold_dir, tmp_path / "a", attempts=3, seed=7, runtime=runtime)
    # an "interrupted" run: only the first attempt is there, the rest is made on resume
    invert(gold_dir, tmp_path / "b", attempts=1, seed=7, runtime=runtime)
    before = (tmp_path / "b" / "candidates" / "0000.json").read_text()
    resumed = invert(gold_dir, tmp_path / "b", attempts=3, seed=7, runtime=runtime)
    assert (tmp_path / "b" / "candidates" / "0000.json").read_text() == before  # not redone
    for i in range(3):
        a = load(Candidate, tmp_path / "a" / "candidates" / f"{i:04d}.json")
        b = load(Candidate, tmp_path / "b" / "candidates" / f"{i:04d}.json")
        assert (a.dockerfile, a.sample, a.status) == (b.dockerfile, b.sample, b.status)
    assert resumed.verified == first.verified
    assert sorted(p.name for p in (tmp_path / "a" / "tasks").iterdir()) == sorted(
        p.name for p in (tmp_path / "b" / "tasks").iterdir()
    ) if (tmp_path / "a" / "tasks").exists() else True


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "cligym", *args], capture_output=True, text=True, timeout=600)


def test_invert_bad_input(tmp_path, gold_envs, tmp_path_factory):
    gold_dir = _gold_dir(tmp_path_factory, gold_envs("markupsafe==3.0.2"))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "gold.json").write_text("{not json")
    cases = [
        (["invert", str(tmp_path / "missing"), "-o", str(tmp_path / "r1")], "is not a directory"),
        (["invert", str(bad), "-o", str(tmp_path / "r2")], "not a valid"),
        (["invert", str(gold_dir), "-n", "0", "-o", str(tmp_path / "r3")], "at least 1"),
        (["invert", str(gold_dir), "--operators", "no_such_op", "-o", str(tmp_path / "r4")], "unknown operator"),
    ]
    for args, needle in cases:
        proc = _cli(*args, "-q")
        assert proc.returncode != 0
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr, proc.stderr


def test_operators_listing():
    proc = _cli("operators", "--json")
    assert proc.returncode == 0
    rows = json.loads(proc.stdout)
    assert len(rows) >= 30
    assert len({r["category"] for r in rows}) >= 10
    assert all(r["symptom"] and r["hint"] for r in rows)


def test_a_run_is_resumed_only_as_it_was_made(tmp_path, gold_envs, markupsafe_run):
    """Fewer attempts than finished, or another gold record of the same image: refused with
    one line before any work, and nothing already written changes (the shared markupsafe
    run: 4 finished attempts of seed 1)."""
    gold = gold_envs("markupsafe==3.0.2")
    gold_dir, run = markupsafe_run / "gold", markupsafe_run / "run"
    written = {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}

    other = tmp_path / "other-gold"
    other.mkdir()
    save(gold.model_copy(update={"tests": gold.tests[:-1]}), other / "gold.json")  # same image
    cases = [
        (["invert", str(gold_dir), "-n", "1", "--seed", "1", "-o", str(run)], "already holds 4 finished attempts"),
        (["invert", str(other), "-n", "4", "--seed", "1", "-o", str(run)], "another gold record"),
        (["invert", str(gold_dir), "-n", "4", "--seed", "4", "-o", str(run)], "other arguments"),
    ]
    for args, needle in cases:
        proc = _cli(*args, "-q")
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0], proc.stderr
    assert {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()} == written
