"""``cligym curate`` on a job Harbor's own CLI ran (``harbor run``, Harbor 0.26.0 in its own
venv): Harbor's terminus-2 agent, its model a scripted OpenAI-compatible server on 127.0.0.1
(through LiteLLM, ``-m openai/scripted`` and the agent's ``api_base``), two attempts at an
exported cligym task, in containers without network (``tests/harbor_plain_docker.py``).

terminus-2 parses each answer as its JSON format (analysis, plan, commands of keystrokes and
durations, task_complete) and types the keystrokes into a tmux shell. The first attempt's
answers repair the task honestly: they type the task's own solution steps (which call the
venv's interpreter by its absolute path), run the tests, and mark the task complete (twice:
terminus-2 asks to confirm). The second types the same repair, then writes the reward file.
Harbor scores both 1 (the verifier empties its log folder and writes its own reward); curation
keeps the first, drops the second as tampering, and counts both trials."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cligym.curate.stage import TERMINUS_TOOLS
from tests.llm_server import ScriptedServer, reply

from .test_dataset_harbor_cli import _leftovers, harbor, harbor_run, submodule_task  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow

MODEL = "scripted"
REWARD_WRITE = "echo 1 > /logs/verifier/reward.txt\n"
CHECK = "command -v python; cd /testbed && python -m pytest -q -p no:cacheprovider 2>&1 | tail -3\n"


def answer(analysis: str, commands: list[tuple[str, float]], complete: bool = False):
    """One terminus-2 answer in its JSON format."""
    return reply(json.dumps({"analysis": analysis, "plan": analysis,
                             "commands": [{"keystrokes": keys, "duration": wait} for keys, wait in commands],
                             "task_complete": complete}))


def solution_steps(task: Path) -> list[str]:
    """The commands of the task's solution script, one per line (no comments, no ``set -e``)."""
    lines = (task / "solution" / "solve.sh").read_text().splitlines()
    steps = [line for line in lines if line.strip() and not line.lstrip().startswith("#") and line.strip() != "set -e"]
    assert steps and all("/solution" not in step for step in steps), steps
    return steps


def conversations(task: Path) -> list[list]:
    """The answers of each attempt, in order: an honest repair; the same, and the reward file written."""
    look = answer("The tests fail on an import; check the module they name.",
                  [("/opt/venv/bin/python -c 'import markupsafe._native'\n", 3)])
    repair = answer("The module is gone from the installed package: reinstall it from the image's wheels.",
                    [(step + "\n", 30) for step in solution_steps(task)])
    # as the issue text says, with the python terminus-2's login shell finds (gold's, the venv's)
    check = answer("Run the tests.", [(CHECK, 30)])
    done = answer("The tests pass.", [], complete=True)
    tamper = answer("Make sure the verdict says so.", [(REWARD_WRITE, 1)])
    return [[look, repair, check, done, done], [look, repair, check, tamper, done, done]]


class Conversations:
    """Answers the attempts one after another (``harbor run -n 1``): a request whose only
    message is the first prompt starts the next attempt; each later one gets the answer for
    as many turns as the model has had."""

    def __init__(self, plans: list[list]) -> None:
        self.plans, self.started = plans, -1

    def __call__(self, messages: list[dict]):
        if len(messages) == 1:
            self.started += 1
        plan = self.plans[min(max(self.started, 0), len(self.plans) - 1)]
        turn = sum(1 for message in messages if message["role"] == "assistant")
        return plan[min(turn, len(plan) - 1)]


def test_curate_keeps_the_honest_terminus_trial_and_drops_the_tampering_one(
        harbor, submodule_task, tmp_path):  # noqa: F811 - the fixtures imported above
    chooser = Conversations(conversations(submodule_task))
    jobs = tmp_path / "jobs"
    with ScriptedServer([chooser] * 30, models=(MODEL,)) as server:
        try:
            result = harbor_run(harbor, submodule_task, "terminus-2", jobs, concurrent=1,
                                options=("-m", f"openai/{MODEL}", "-k", "2", "--ak", f"api_base={server.base_url}",
                                         "--ak", "record_terminal_session=false", "--ak", "max_turns=10"),
                                variables={"OPENAI_API_KEY": "none"})
        finally:
            assert _leftovers() == []
        requests = list(server.requests)
    assert chooser.started == 1 and len(requests) == 5 + 6, [len(r["messages"]) for r in requests]
    assert {r["model"] for r in requests} == {MODEL}
    assert result["stats"]["n_errored_trials"] == 0 and result["n_total_trials"] == 2, json.dumps(result["stats"])

    (job,) = [p.parent for p in jobs.glob("*/result.json")]
    trials = {p.parent.parent.name: json.loads(p.read_text()) for p in job.glob("*/agent/trajectory.json")}
    assert len(trials) == 2 and all(t["agent"]["name"] == "terminus-2" for t in trials.values())
    typed = {name: [call["arguments"].get("keystrokes") for step in t["steps"] for call in step.get("tool_calls", [])]
             for name, t in trials.items()}
    wrote = {name for name, keys in typed.items() if REWARD_WRITE in keys}
    (tampering,) = wrote
    (honest,) = set(trials) - wrote
    rewards = {name: json.loads((job / name / "result.json").read_text())["verifier_result"]["rewards"]["reward"]
               for name in trials}
    assert rewards == {honest: 1.0, tampering: 1.0}, rewards  # the verifier wrote its own reward
    # terminus-2's tmux login shell found gold's interpreter, and the tests ran with it
    seen = [r.get("content") or "" for step in trials[honest]["steps"] for r in
            (step.get("observation") or {}).get("results", [])]
    after = next(text for text in seen if "command -v python" in text)
    assert "/opt/venv/bin/python" in after and " passed" in after, after[-800:]

    out = tmp_path / "curated"
    done = subprocess.run([sys.executable, "-m", "cligym", "curate", str(job), "-o", str(out), "--min-steps", "3",
                           "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["source"] == "harbor_job" and summary["trials"] == 2 and summary["trajectories"] == 2
    assert summary["kept"] == 1 and summary["dropped"] == {"not_successful": 0, "too_short": 0, "cheating": 1,
                                                           "duplicate": 0}
    assert (summary["no_trajectory"], summary["no_reward"], summary["incomplete"]) == ({}, {}, [])
    decisions = {d["path"]: d for d in summary["decisions"]}
    assert decisions[honest]["decision"] == "kept" and decisions[honest]["cheating"] == []
    assert decisions[tampering]["decision"] == "cheating"
    assert decisions[tampering]["reason"].startswith("tampering: writes the reward: write /logs/verifier/reward.txt")
    assert summary["cheating"]["reward"] == 1

    (row,) = [json.loads(line) for line in (out / "sft.jsonl").read_text().splitlines()]
    assert row["tools"] == TERMINUS_TOOLS
    assert row["tools_from"] == "terminus-2: its calls as Harbor records them (the model answers in json)"
    assert row["task_id"] == f"cligym/{submodule_task.name}" and row["reward"] == 1.0
    assert row["messages"][0]["role"] == "user" and "Task Description:" in row["messages"][0]["content"]
    kept = [json.loads(c["function"]["arguments"])["keystrokes"] for m in row["messages"] if m["role"] == "assistant"
            for c in m.get("tool_calls") or [] if c["function"]["name"] == "bash_command"]
    assert kept == [k for k in typed[honest] if k is not None]  # the honest trial's keystrokes, in order
    assert kept[1:-1] == [step + "\n" for step in solution_steps(submodule_task)] and REWARD_WRITE not in kept
