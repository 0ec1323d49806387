"""A rollout's trajectory is on disk after every step: an attempt killed half-way leaves
what it did (``TrajectoryRecorder(autosave=...)``), marked partial until it is finished."""

from __future__ import annotations

from cligym.agents.trajectory import TrajectoryRecorder
from cligym.models.io import load, save
from cligym.models.trajectory import Trajectory


def test_every_step_is_saved_as_it_is_recorded_and_the_finished_one_replaces_it(tmp_path):
    path = tmp_path / "task" / "0" / "trajectory.json"
    recorder = TrajectoryRecorder("cligym-llm", "0.1.0", autosave=path)
    recorder.user("repair the environment")
    first = load(Trajectory, path)
    assert [s.source for s in first.steps] == ["user"] and first.final_metrics.extra == {"partial": True}
    recorder.agent("looking", tool_calls=[("c1", "bash", {"command": "ls"})], observations=[("c1", "a b")])
    assert len(load(Trajectory, path).steps) == 2
    save(recorder.finish({"reward": 1}), path)
    assert load(Trajectory, path).final_metrics.extra == {"reward": 1}

