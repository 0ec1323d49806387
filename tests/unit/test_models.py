"""Records: saved and loaded atomically; a bad or foreign record is one clear line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cligym import __version__
from cligym.errors import BadInput
from cligym.layout import RunDir, safe_id
from cligym.models.gold import GoldEnv
from cligym.models.io import load, save
from cligym.models.issue import TaskIssues
from cligym.models.probe import Probe
from cligym.models.rollout import RolloutResult
from cligym.models.run import InvertConfig, Summary
from cligym.models.task import Candidate, Task
from cligym.models.trajectory import Trajectory


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
        load(Task, path)
    assert "written by" not in str(caught.value)


@pytest.mark.parametrize("bad", ["../../x/pwn", "a/b", "..", ".hidden", "", "x" * 300, "a\nb"])
def test_ids_that_would_leave_their_directory_are_refused(tmp_path, bad):
    with pytest.raises(BadInput):
        RunDir(tmp_path).task_record(bad)
    with pytest.raises(BadInput):
        safe_id(bad)


def test_real_instance_ids_are_accepted(tmp_path):
    for ok in ("markupsafe.ca_bundle_emptied+env_home_missing.0a1b2c3d4e", "python-dotenv.agent.ffff000011"):
        assert RunDir(tmp_path).task_record(ok).parent.name == ok


#: Records written by cligym 0.1.0 before the records moved into cligym.models (the task
#: instance: as its schema 2 has it).
OLD = Path(__file__).parents[1] / "data" / "records-0.1.0"
#: Fields added since, with defaults.
ADDED_SINCE = {GoldEnv: ("requirements_from", "inferred", "left_out", "registry_images", "suite"),
               Probe: ("workdir", "plugin"),
               InvertConfig: ("gold_digest", "scenarios", "mix"),
               Candidate: ("screened", "decoys", "refused"),
               TaskIssues: ("style", "refused", "prompt_tokens", "completion_tokens"),
               Summary: ("per_difficulty", "per_k", "exhausted", "run_seconds", "limit_seconds", "cost_ratio"),
               RolloutResult: ("verdict",),
               Task: ("state", "carried_bytes", "solution_origin")}
#: Fields renamed since (the old name still loads): model -> {new: old}.
RENAMED = {Summary: {"phase_seconds": "stage_seconds"}}
#: Fields added since to records held in a list field: model -> (list field, added fields).
ADDED_INSIDE = {Candidate: ("operators", ("shows", "offline", "necessary", "fixes", "role", "blocks", "places"))}
#: Fields added since to a record held in a field: model -> (field, added fields).
ADDED_NESTED = {Candidate: ("agent", ("last_turn", "recovery"))}


@pytest.mark.parametrize("name, model", [
    ("gold.json", GoldEnv), ("probe.json", Probe), ("candidate-operators.json", Candidate),
    ("candidate-agent.json", Candidate), ("instance.json", Task), ("issues.json", TaskIssues),
    ("config.json", InvertConfig), ("summary.json", Summary), ("result.json", RolloutResult),
    ("trajectory.json", Trajectory),
])
def test_records_written_before_the_move_still_load(name, model):
    record = load(model, OLD / name)
    again = json.loads(record.model_dump_json(by_alias=True, exclude_none=model is Trajectory))
    for field in ADDED_SINCE.get(model, ()):
        again.pop(field)
    for new, old in RENAMED.get(model, {}).items():
        again[old] = again.pop(new)
    holder, added = ADDED_INSIDE.get(model, ("", ()))
    for item in again.get(holder, []):
        for field in added:
            item.pop(field)
    holder, added = ADDED_NESTED.get(model, ("", ()))
    for field in added:
        (again.get(holder) or {}).pop(field, None)
    assert again == json.loads((OLD / name).read_text())  # nothing lost, nothing else added


def test_a_task_record_of_schema_1_is_refused(tmp_path):
    """Schema 2 derives operators, categories, symptoms and hints from ``applied``: a record
    that stored them is not read as if it were one."""
    record = json.loads((OLD / "instance.json").read_text()) | {"schema_version": 1, "operators": ["x"]}
    (tmp_path / "instance.json").write_text(json.dumps(record))
    with pytest.raises(BadInput, match="schema_version"):
        load(Task, tmp_path / "instance.json")


def test_a_task_says_what_its_changes_are():
    from cligym.models.task import AppliedChange, DegradationQuery

    task = load(Task, OLD / "instance.json")
    blocker = AppliedChange(name="pin", category="package_metadata", target="/etc/pip.conf", symptom="", hint="b",
                              role="blocker")
    scenario = task.model_copy(update={"applied": [blocker, *task.applied]})
    assert (scenario.operators, scenario.category) == (["pin", "ca_bundle_emptied"], "certificates")
    assert (scenario.categories, scenario.symptoms, scenario.hints) == (
        ["certificates", "package_metadata"], ["", "s"], ["b", "h"])
    query = DegradationQuery(title="t", category="dynamic_linking", selected_tests=["t"], description="d",
                             recovery_strategy="Restore the loader cache.")
    agent = task.model_copy(update={"applied": [], "origin": "agent", "query": query,
                                    "changed_paths": ["/testbed/src/m.py", "/etc/ld.so.cache"]})
    assert (agent.operators, agent.category, agent.symptoms, agent.hints) == (
        ["llm_agent"], "dynamic_linking", [], ["Restore the loader cache."])
    assert agent.categories == ["code", "dynamic_linking"]
    assert agent.model_copy(update={"changed_paths": ["/testbed/__pycache__/m.pyc"]}).categories == ["dynamic_linking"]
