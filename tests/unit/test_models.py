"""Records: saved and loaded atomically; a bad or foreign record is one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cligym import __version__
from cligym.errors import BadInput
from cligym.layout import RunDir, safe_id
from cligym.models import (
    Candidate,
    GoldEnv,
    InvertConfig,
    Probe,
    RolloutResult,
    Summary,
    TaskInstance,
    TaskIssues,
    Trajectory,
    load,
    save,
)


def test_a_record_round_trips(tmp_path):
    candidate = Candidate(id="0003", attempt=3, seed=1, status="discarded", discard_kind="no_failure")
    path = save(candidate, RunDir(tmp_path).candidate(3))
    assert path == tmp_path / "candidates" / "0003.json"
    assert load(Candidate, path) == candidate


def test_an_invalid_record_names_the_field_and_the_version_that_wrote_it(tmp_path):
    path = tmp_path / "gold.json"
    path.write_text(json.dumps({"cligym_version": "0.0.1", "source": {"kind": "pypi"}}))
    with pytest.raises(BadInput) as caught:
        load(GoldEnv, path, "gold environment")
    message = str(caught.value)
    assert "\n" not in message
    assert "source.spec: Field required" in message
    assert f"written by cligym 0.0.1, this is {__version__}" in message


def test_a_record_of_this_version_does_not_blame_the_version(tmp_path):
    path = tmp_path / "task.json"
    path.write_text(json.dumps({"cligym_version": __version__, "instance_id": "x"}))
    with pytest.raises(BadInput) as caught:
        load(TaskInstance, path)
    assert "written by" not in str(caught.value)


@pytest.mark.parametrize("bad", ["../../x/pwn", "a/b", "..", ".hidden", "", "x" * 300, "a\nb"])
def test_ids_that_would_leave_their_directory_are_refused(tmp_path, bad):
    with pytest.raises(BadInput):
        RunDir(tmp_path).instance(bad)
    with pytest.raises(BadInput):
        safe_id(bad)


def test_real_instance_ids_are_accepted(tmp_path):
    for ok in ("markupsafe.ca_bundle_emptied+env_home_missing.0a1b2c3d4e", "python-dotenv.agent.ffff000011"):
        assert RunDir(tmp_path).instance(ok).parent.name == ok


#: Records written by cligym 0.1.0 before the records moved into cligym.models.
OLD = Path(__file__).parents[1] / "data" / "records-0.1.0"
#: Fields added since, with defaults.
ADDED_SINCE = {GoldEnv: ("requirements_from", "inferred", "left_out", "registry_images"), Probe: ("workdir", "plugin"),
               InvertConfig: ("gold_digest", "scenarios", "mix"),
               TaskInstance: ("applied", "offline_fair", "repair_steps", "scenario", "family", "difficulty"),
               Candidate: ("screened", "decoys", "refused"),
               TaskIssues: ("style", "refused", "prompt_tokens", "completion_tokens"),
               Summary: ("per_difficulty", "per_k"), RolloutResult: ("verdict",)}
#: Fields added since to records held in a list field: model -> (list field, added fields).
ADDED_INSIDE = {Candidate: ("operators", ("shows", "offline", "necessary", "fixes", "role", "blocks", "places"))}
#: Fields added since to a record held in a field: model -> (field, added fields).
ADDED_NESTED = {Candidate: ("agent", ("last_turn",))}


@pytest.mark.parametrize("name, model", [
    ("gold.json", GoldEnv), ("probe.json", Probe), ("candidate-operators.json", Candidate),
    ("candidate-agent.json", Candidate), ("instance.json", TaskInstance), ("issues.json", TaskIssues),
    ("config.json", InvertConfig), ("summary.json", Summary), ("result.json", RolloutResult),
    ("trajectory.json", Trajectory),
])
def test_records_written_before_the_move_still_load(name, model):
    record = load(model, OLD / name)
    again = json.loads(record.model_dump_json(by_alias=True, exclude_none=model is Trajectory))
    for field in ADDED_SINCE.get(model, ()):
        again.pop(field)
    holder, added = ADDED_INSIDE.get(model, ("", ()))
    for item in again.get(holder, []):
        for field in added:
            item.pop(field)
    holder, added = ADDED_NESTED.get(model, ("", ()))
    for field in added:
        (again.get(holder) or {}).pop(field, None)
    assert again == json.loads((OLD / name).read_text())  # nothing lost, nothing else added


def test_records_written_before_the_renames_still_load(tmp_path):
    """A curation summary said ``verdicts`` and a gold reference ``manifest`` before the
    renames to ``decisions`` and ``fingerprint``: both still load, under the new names."""
    from cligym.models.curate import CurationSummary
    from cligym.models.reference import GoldReference

    decision = {"task_id": "t-1", "attempt": 0, "path": "t-1/0", "reward": 1.0, "agent_steps": 25, "decision": "kept"}
    old_summary = {"rollout_dir": "r", "out_dir": "o", "min_steps": 20, "loop_repeat": 4, "trajectories": 1,
                   "successful": 1, "failed": 0, "kept": 1, "dropped": {}, "cheating": {}, "cheating_detected": {},
                   "loops_failures": 0, "loops_all": 0, "loop_rate_failures": None, "loop_rate_all": 0.0,
                   "verdicts": [decision]}
    (tmp_path / "summary.json").write_text(json.dumps(old_summary))
    summary = load(CurationSummary, tmp_path / "summary.json")
    assert [d.task_id for d in summary.decisions] == ["t-1"]
    assert "decisions" in json.loads(summary.model_dump_json()) and "verdicts" not in summary.model_dump()

    old_reference = {"instance_id": "t-1", "workdir": "/testbed", "test_command": "pytest", "interpreter": "/p",
                     "command_path": "/p", "rootdir": "/testbed", "fail_to_pass": ["a"], "pass_to_pass": [],
                     "order": ["a"], "keys": [], "pristine": [], "foreign": [], "conftests": [], "shadow_dirs": {},
                     "protected_modules": [], "spec": ["P /usr/bin/python3"], "manifest": ["f 755 /usr/bin/python3"]}
    (tmp_path / "bundle.json").write_text(json.dumps(old_reference))
    assert load(GoldReference, tmp_path / "bundle.json").fingerprint == ["f 755 /usr/bin/python3"]
