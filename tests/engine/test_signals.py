"""Signals to a real ``cligym invert`` on a real gold environment.

SIGTERM (what ``timeout``, CI runners and ``docker stop`` send) ends it like Ctrl-C: the
attempt in progress cleans up, the resume line is printed, the exit code is 143, and the
same command run again finishes with the tasks an uninterrupted run makes. ``kill -9``
leaves its containers and images behind; the next long command removes them and leaves a
live run's container alone.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cligym.cli.signals import INTERRUPTED
from cligym.invert import invert
from cligym.layout import RunDir
from cligym.models.io import load
from cligym.models.task import Candidate

SPEC = "markupsafe==3.0.2"


@pytest.fixture
def gold_dir(tmp_path, gold_copy) -> Path:
    return gold_copy(SPEC, tmp_path / "gold")


def _invert_cmd(gold_dir: Path, run_dir: Path, attempts: int, seed: int) -> list[str]:
    return [sys.executable, "-m", "cligym", "invert", str(gold_dir), "-o", str(run_dir), "-n", str(attempts),
            "--seed", str(seed), "-q"]


def _leftovers(runtime, pid: int) -> tuple[list[str], set[str]]:
    return runtime.labelled_containers(pid=pid), runtime.labelled_images(pid=pid)


def _wait_mid_attempt(runtime, proc: subprocess.Popen, run_dir: Path, *, candidates: int, image: bool) -> None:
    """Until ``candidates`` attempts are saved and the next one holds a container (and,
    with ``image``, its broken image) in the engine."""
    deadline = time.monotonic() + 900
    while True:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run made no progress"
        if len(_candidates(run_dir)) >= candidates:
            containers, images = _leftovers(runtime, proc.pid)
            if containers and (images or not image):
                return
        time.sleep(0.1)


def _candidates(run_dir: Path) -> dict[str, Candidate]:
    """The saved attempts (a file being written counts once it loads)."""
    found = {}
    for path in sorted(RunDir(run_dir).candidates.glob("*.json")):
        try:
            found[path.name] = load(Candidate, path)
        except Exception:  # noqa: BLE001 - not written completely yet
            pass
    return found


def _tasks(run_dir: Path) -> set[str]:
    tasks = RunDir(run_dir).tasks
    return {p.name for p in tasks.iterdir()} if tasks.is_dir() else set()


def _all_dead(runtime, pid: int) -> bool:
    """Whether every leftover of ``pid`` counts as a dead run's. Listed dead first: a
    removal the killed run had asked for may finish meanwhile (CI once saw one)."""
    dead_containers, dead_images = set(runtime.dead_containers()), set(runtime.dead_images())
    containers, images = _leftovers(runtime, pid)
    return set(containers) <= dead_containers and images <= dead_images


def _remove_leftovers(runtime, pid: int) -> None:
    containers, images = _leftovers(runtime, pid)
    runtime.remove_containers(containers)
    runtime.remove_images(images)


# slow (~2 min): the kill -9 case above and the dataset's SIGKILL case keep resuming in the default run
@pytest.mark.slow
def test_sigterm_mid_invert_cleans_up_and_the_rerun_finishes_the_same_run(runtime, gold_dir, tmp_path):
    attempts, seed = 4, 1
    reference = invert(gold_dir, tmp_path / "reference", attempts=attempts, seed=seed, runtime=runtime)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(_invert_cmd(gold_dir, run_dir, attempts, seed), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _wait_mid_attempt(runtime, proc, run_dir, candidates=1, image=False)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        leftovers = _leftovers(runtime, proc.pid)
        _remove_leftovers(runtime, proc.pid)
    assert proc.returncode == 143, stderr
    assert "stopping took over" not in stderr, stderr  # the cleanup hung: where it stood
    assert stderr.strip().splitlines()[-1] == INTERRUPTED and "Traceback" not in stderr
    assert leftovers == ([], set()), f"the interrupted run left {leftovers}"
    kept = _candidates(run_dir)
    assert 1 <= len(kept) < attempts
    config = RunDir(run_dir).config.read_text()
    rerun = subprocess.run(_invert_cmd(gold_dir, run_dir, attempts, seed), capture_output=True, text=True,
                           timeout=1800)
    assert rerun.returncode == 0, rerun.stderr + config
    resumed = _candidates(run_dir)
    assert all(resumed[name] == kept[name] for name in kept)  # finished records are not redone
    expected = _candidates(tmp_path / "reference")
    assert sorted(resumed) == sorted(expected)
    assert [c.dockerfile for c in resumed.values()] == [c.dockerfile for c in expected.values()]
    outcomes = [(c.status, c.discard_kind, c.reason) for c in resumed.values()]
    assert [o[0] for o in outcomes] == [c.status for c in expected.values()], (
        outcomes, [(c.status, c.discard_kind, c.reason) for c in expected.values()])
    assert _tasks(run_dir) == _tasks(tmp_path / "reference") and reference.verified == len(_tasks(run_dir))


def test_kill_9_leftovers_are_reaped_by_the_next_run_and_a_live_run_is_spared(runtime, gold_dir, tmp_path,
                                                                              base_image):
    run_dir = tmp_path / "run"
    cmd = _invert_cmd(gold_dir, run_dir, 1, 3)  # killed in its one attempt, which the rerun makes
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_mid_attempt(runtime, proc, run_dir, candidates=0, image=True)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        containers, images = _leftovers(runtime, proc.pid)
        assert containers and images, "kill -9 should leave the attempt's container and broken image"
        assert any(_all_dead(runtime, proc.pid) or time.sleep(1) for _ in range(3)), "leftovers not known dead"
        with runtime.session(base_image) as live:
            rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            assert rerun.returncode == 0, rerun.stderr
            assert live.id in runtime.labelled_containers(mine=True), "the rerun removed a live run's container"
            assert live.exec("true").ok
        assert _leftovers(runtime, proc.pid) == ([], set()), "the rerun did not reap the killed run's leftovers"
        assert len(_candidates(run_dir)) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _remove_leftovers(runtime, proc.pid)
