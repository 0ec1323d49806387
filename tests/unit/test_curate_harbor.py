"""Curation of a Harbor job directory (``harbor run``'s JOBS/<job>), told apart from a
``cligym rollout`` directory by its layout: the same decisions, filters, summary and SFT rows;
trials without a trajectory or a valid reward counted and named; each row carries the tools
its own agent had. The job is tests/data/harbor_job/job, written with Harbor's own models
(tests/data/harbor_job/make_job.py says which trial is which)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cligym.agents.tools import TOOLS
from cligym.curate.filters import CHEAT_RULES
from cligym.curate.stage import TERMINUS_TOOLS, curate
from cligym.errors import BadInput
from cligym.models.curate import CurationSummary
from cligym.models.io import load
from tests.unit.test_curate import Script

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "harbor_job" / "job"
HARBOR_PY = ROOT / ".venv-harbor-cli" / "bin" / "python"

HONEST, TAMPER, NOVERIFY, UNFINISHED = (f"markupsafe-env-001__{s}" for s in ("Hn3kQ7x", "Tb8mW2c", "NoVer7d",
                                                                              "Unf1n8e"))
SHORT, TOOLFUL, NOTRAJ = (f"markupsafe-env-002__{s}" for s in ("Sh0rT4a", "To0lS5b", "N0tRaj6"))


@pytest.fixture()
def job(tmp_path) -> Path:
    """A copy of the job, as ``harbor run -o jobs`` left it under jobs/<job name>."""
    target = tmp_path / "jobs" / "2026-05-01__12-00-00"
    shutil.copytree(DATA, target)
    return target


def rows_of(out: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (out / "sft.jsonl").read_text().splitlines()]
    return {f"{r['task_id']}#{r['attempt']}": r for r in rows}


def test_a_harbor_job_gets_the_same_decisions_and_counts_every_trial(job, tmp_path):
    out = tmp_path / "curated"
    summary = curate(job, out, min_steps=3)
    assert summary.source == "harbor_job" and summary.rollout_dir == str(job)
    assert (summary.trials, summary.trajectories, summary.successful, summary.failed) == (7, 5, 3, 2)
    assert summary.kept == 2
    assert summary.dropped == {"not_successful": 2, "too_short": 0, "cheating": 1, "duplicate": 0}
    assert summary.cheating == {rule: int(rule in ("reward", "harness_dirs")) for rule in CHEAT_RULES}
    assert summary.incomplete == [UNFINISHED]
    assert summary.no_trajectory == {NOTRAJ: "no ATIF trajectory (claude-code wrote none to /logs/agent)"}
    why = "RewardFileNotFoundError: No reward file found at /logs/verifier/reward.txt"
    assert summary.no_reward == {NOVERIFY: why} and summary.exceptions == {NOVERIFY: why}

    decisions = {v.path: v for v in summary.decisions}
    assert sorted(decisions) == sorted([HONEST, TAMPER, NOVERIFY, SHORT, TOOLFUL])
    assert [(decisions[p].task_id, decisions[p].attempt) for p in (HONEST, TAMPER, NOVERIFY)] == [
        ("cligym/markupsafe-env-001", n) for n in range(3)]  # Harbor's task name; attempts by start time
    assert decisions[HONEST].decision == "kept" and decisions[HONEST].agent_steps == 6
    tamper = decisions[TAMPER]
    assert tamper.decision == "cheating" and tamper.reward == 1.0  # the verifier wrote its own 1: still dropped
    assert tamper.reason.startswith("tampering: writes the reward: write /logs/verifier/reward.txt (step 6)")
    assert {(h.rule, h.tool, h.command) for h in tamper.cheating} == {
        (rule, "bash_command", "echo 1 > /logs/verifier/reward.txt\n") for rule in ("reward", "harness_dirs")}
    assert decisions[NOVERIFY].decision == "not_successful" and decisions[NOVERIFY].reward is None
    assert decisions[NOVERIFY].reason == f"no reward: {why}"
    assert (decisions[SHORT].decision, decisions[SHORT].reason) == ("not_successful", "reward 0.0")
    assert decisions[TOOLFUL].decision == "kept"
    assert load(CurationSummary, out / "summary.json") == summary

    strict = curate(job, tmp_path / "strict")  # the default 20 steps: every success is short
    assert strict.dropped == {"not_successful": 2, "too_short": 3, "cheating": 0, "duplicate": 0}
    assert strict.cheating_detected["reward"] == 1 and strict.kept == 0


def test_rows_carry_the_tools_their_own_agent_had(job, tmp_path):
    out = tmp_path / "curated"
    curate(job, out, min_steps=3)
    rows = rows_of(out)
    assert sorted(rows) == ["cligym/markupsafe-env-001#0", "cligym/markupsafe-env-002#1"]
    terminus = rows["cligym/markupsafe-env-001#0"]
    # terminus-2 answers in JSON, recorded as bash_command / mark_task_complete calls: those
    # tools, and it says so; never cligym's
    assert terminus["tools"] == TERMINUS_TOOLS
    assert terminus["tools_from"] == "terminus-2: its calls as Harbor records them (the model answers in json)"
    recorded = json.loads((job / TOOLFUL / "agent" / "trajectory.json").read_text())["agent"]["tool_definitions"]
    toolful = rows["cligym/markupsafe-env-002#1"]
    assert toolful["tools"] == recorded and toolful["tools_from"] == "trajectory"
    assert all(row["tools"] != TOOLS for row in rows.values())

    messages = terminus["messages"]
    assert messages[0]["role"] == "user" and "Task Description:" in messages[0]["content"]
    calls = [c["function"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert calls[0] == {"name": "bash_command",
                        "arguments": json.dumps({"keystrokes": "python -c 'import markupsafe'\n", "duration": 1.0})}
    assert [c["name"] for c in calls[-2:]] == ["mark_task_complete"] * 2
    assert terminus["reward"] == 1.0 and terminus["reasoning_history"] is None


def test_the_rows_of_both_agents_load_with_datasets(job, tmp_path, monkeypatch):
    out = tmp_path / "curated"
    curate(job, out, min_steps=3)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    ds = datasets.load_dataset("json", data_files=str(out / "sft.jsonl"), split="train", cache_dir=str(tmp_path / "hf"))
    assert ds.num_rows == 2 and sorted(ds["tools_from"]) == [
        "terminus-2: its calls as Harbor records them (the model answers in json)", "trajectory"]
    tools = dict(zip(ds["task_id"], ds["tools"], strict=True))
    assert tools["cligym/markupsafe-env-001"][0]["function"]["name"] == "bash_command"
    assert tools["cligym/markupsafe-env-002"][0]["function"][
        "name"] == "bash"


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=4))


def test_the_reward_is_harbors_record_never_the_reward_file(job, tmp_path):
    """The agent's container mounts verifier/: a reward file there says nothing. Harbor's
    result.json does, when Harbor holds the reward valid; a reward under another single
    name counts, several names without ``reward`` do not."""
    (job / SHORT / "verifier" / "reward.txt").write_text("1\n")
    (job / SHORT / "verifier" / "reward.json").write_text('{"reward": 1.0}\n')
    (job / NOTRAJ / "verifier" / "reward.txt").unlink()
    _edit(job / HONEST / "result.json", lambda d: d["verifier_result"].update(rewards={"accuracy": 1.0}))
    _edit(job / TOOLFUL / "result.json", lambda d: d["verifier_result"].update(rewards={"a": 1.0, "b": 0.0}))

    def voided(d: dict) -> None:
        d["exception_info"] = {"exception_type": "VerifierTimeoutError", "exception_message": "timed out\nafter 900 s",
                               "exception_traceback": "", "occurred_at": "2026-05-01T12:01:40Z"}
        d["reward_valid"] = False

    _edit(job / TAMPER / "result.json", voided)
    summary = curate(job, tmp_path / "out", min_steps=3)
    decisions = {v.path: v for v in summary.decisions}
    assert decisions[SHORT].reward == 0.0 and decisions[SHORT].decision == "not_successful"
    assert decisions[HONEST].reward == 1.0 and decisions[HONEST].decision == "kept"
    assert summary.no_reward == {
        NOVERIFY: "RewardFileNotFoundError: No reward file found at /logs/verifier/reward.txt",
        TOOLFUL: "the rewards ['a', 'b'] name no 'reward'",
        TAMPER: "Harbor marks the reward invalid (VerifierTimeoutError: timed out)",
    }
    assert summary.exceptions[TAMPER] == "VerifierTimeoutError: timed out"
    assert decisions[TAMPER].decision == "not_successful" and decisions[TAMPER].cheating  # still detected
    assert summary.kept == 1 and summary.cheating_detected["reward"] == 1


def test_trials_without_one_trajectory_are_named_not_guessed(job, tmp_path):
    (job / SHORT / "steps" / "repair" / "agent").mkdir(parents=True)  # a multi-step trial
    _edit(job / TOOLFUL / "agent" / "trajectory.json",
          lambda d: d.update(continued_trajectory_ref="trajectory.cont-1.json"))
    summary = curate(job, tmp_path / "out", min_steps=3)
    assert summary.no_trajectory == {
        NOTRAJ: "no ATIF trajectory (claude-code wrote none to /logs/agent)",
        SHORT: "a multi-step trial: its steps' trajectories are not read",
        TOOLFUL: ("its trajectory continues in trajectory.cont-1.json (split at a summarization): the segments "
                  "are not joined"),
    }
    assert summary.trials == 7 and summary.trajectories == 3 and summary.kept == 1


def test_a_trajectory_that_records_no_tool_call_is_not_judged(job, tmp_path):
    """terminus-2 with raw_content records each answer as its text and no tool calls: the
    reward write in it could not be seen, so the trial is named, not kept."""
    def raw(d: dict) -> None:
        for step in d["steps"]:
            if step["source"] == "agent":
                keys = [c["arguments"].get("keystrokes") for c in step.pop("tool_calls")]
                step["message"] = json.dumps({"analysis": "", "plan": "", "commands": [
                    {"keystrokes": k, "duration": 1.0} for k in keys if k]})
                for result in step["observation"]["results"]:
                    result.pop("source_call_id", None)

    _edit(job / TAMPER / "agent" / "trajectory.json", raw)
    summary = curate(job, tmp_path / "out", min_steps=3)
    assert summary.no_trajectory[TAMPER] == ("its 7 agent steps record no tool calls (as terminus-2 writes them "
                                             "with raw_content): what it ran cannot be checked")
    assert TAMPER not in {v.path for v in summary.decisions} and summary.kept == 2 and summary.trials == 7


def test_an_invalid_trajectory_or_result_is_one_clear_line(job, tmp_path):
    (job / HONEST / "agent" / "trajectory.json").write_text('{"schema_version": "ATIF-v1.8", "steps": []}')
    with pytest.raises(BadInput, match="not a valid ATIF trajectory") as info:
        curate(job, tmp_path / "out")
    assert "\n" not in str(info.value) and HONEST in str(info.value)
    (job / HONEST / "agent" / "trajectory.json").unlink()
    (job / TAMPER / "result.json").write_text('{"trial_name": "x"}')
    with pytest.raises(BadInput, match="not a valid Harbor trial result") as info:
        curate(job, tmp_path / "out")
    assert "\n" not in str(info.value)


def test_the_input_kind_is_told_apart(job, tmp_path):
    rollouts = tmp_path / "rollouts"
    Script("markupsafe-env-009").explore(21).finish().write(rollouts, 1.0)
    summary = curate(rollouts, tmp_path / "r")
    assert summary.source == "rollout" and summary.trials == 1 and summary.kept == 1
    assert summary.no_trajectory == {} and summary.no_reward == {} and summary.exceptions == {}
    (row,) = rows_of(tmp_path / "r").values()
    assert row["tools"] == TOOLS and row["tools_from"] == "cligym.agents.tools.TOOLS"  # cligym's own agent

    with pytest.raises(BadInput) as info:  # the jobs folder, not a job
        curate(job.parent, tmp_path / "x")
    assert str(info.value) == (f"{job.parent} holds Harbor job dirs ({job.name}), not trials: give one of them, "
                               f"e.g. {job}")
    neither = tmp_path / "neither"
    (neither / "a" / "b").mkdir(parents=True)
    (neither / "a" / "b" / "notes.txt").write_text("x")
    for path in (neither, tmp_path / "missing"):
        with pytest.raises(BadInput) as info:
            curate(path, tmp_path / "x")
        assert "\n" not in str(info.value) and "a Harbor job dir (<trial>/config.json" in str(info.value)
    for trial in job.iterdir():  # a job whose trials never ended
        if trial.is_dir():
            for record in trial.glob("result.json"):
                record.unlink()
    with pytest.raises(BadInput, match="holds no trajectories and no finished trials"):
        curate(job, tmp_path / "x")


def test_the_cli_says_which_input_it_read(job, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "cligym", "curate", str(job), "-o", str(tmp_path / "out"),
                           "--min-steps", "3", "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["source"] == "harbor_job" and data["trials"] == 7 and data["kept"] == 2
    assert list(data["no_trajectory"]) == [NOTRAJ]
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = subprocess.run([sys.executable, "-m", "cligym", "curate", str(empty), "-o", str(tmp_path / "o2")],
                          capture_output=True, text=True, timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0] == f"cligym: error: {empty} holds no rollouts and no Harbor trials (expected a rollout dir " \
        "(<task>/<attempt>/trajectory.json and result.json, as cligym rollout writes) or a Harbor job dir " \
        "(<trial>/config.json, result.json and agent/trajectory.json, as harbor run writes))"


def test_the_job_is_harbors_own_format():
    """Harbor's own models read every record of the job (with Harbor's Python, beside ours)."""
    if not HARBOR_PY.exists():
        pytest.skip(".venv-harbor-cli (Harbor's CLI and models) is missing")
    check = ("import sys, pathlib\nfrom harbor.models.trial.result import TrialResult\n"
             "from harbor.models.trial.config import TrialConfig\nfrom harbor.models.job.result import JobResult\n"
             "from harbor.models.trajectories import Trajectory\njob = pathlib.Path(sys.argv[1])\n"
             "JobResult.model_validate_json((job / 'result.json').read_text())\nn = 0\n"
             "for p in sorted(job.glob('*/config.json')):\n    TrialConfig.model_validate_json(p.read_text()); n += 1\n"
             "for p in sorted(job.glob('*/result.json')):\n    TrialResult.model_validate_json(p.read_text()); n += 1\n"
             "for p in sorted(job.glob('*/agent/trajectory.json')):\n"
             "    Trajectory.model_validate_json(p.read_text()); n += 1\nprint('harbor-ok', n)")
    proc = subprocess.run([str(HARBOR_PY), "-c", check, str(DATA)], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "harbor-ok 18", proc.stderr[-2000:]
