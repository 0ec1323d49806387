"""Whole runs of ``cligym invert --agent llm`` on a real gold image, driven by the scripted
OpenAI-compatible server (a real degradation through execute_bash, a Dockerfile written
by the agent, the harness's checks, a task that exports and validates), and its one-line
refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cligym.agents.client import ModelClient, ModelConfig
from cligym.agents.loop import AgentLimits
from cligym.errors import BadInput
from cligym.export.stage import export
from cligym.invert.agentic import invert_with_agent
from cligym.invert.query import QUERY_SYSTEM
from cligym.layout import RunDir
from cligym.models.io import load
from cligym.models.task import Task
from cligym.verify.carried import CARRY_LIMIT
from tests.llm_server import error, reply, tool_call
from tests.scripted_agents import FROM_THE_INDEX, HONEST_REINSTALL, DegradingPolicy

ROOT = Path(__file__).resolve().parents[2]


HARBOR_PY = ROOT / ".venv-harbor" / "bin" / "python"


SO = "/opt/venv/lib/python3.11/site-packages/markupsafe/_speedups.cpython-311-x86_64-linux-gnu.so"


CORRUPT = f"printf 'JUNK' | dd of={SO} bs=1 count=4 conv=notrunc status=none"


def _query(tests, title, **extra):
    return json.dumps({"title": title, "category": "dynamic linking", "selected_tests": tests,
                       "description": "Damage the compiled speedups module so it no longer loads, then run the tests.",
                       "expected_error": "ImportError: invalid ELF header",
                       "recovery_strategy": "Reinstall the compiled extension module.", **extra})


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "cligym", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=900)


@pytest.fixture(scope="module")
def gold_dir(gold_envs, gold_copy, tmp_path_factory):
    path = gold_copy("markupsafe==3.0.2", tmp_path_factory.mktemp("agent-gold"))
    return path, gold_envs("markupsafe==3.0.2")


@pytest.mark.slow  # the default run drives the LLM agent through a rollout (test_rollout)
def test_agentic_inversion_end_to_end(gold_dir, scripted_server, tmp_path, runtime):
    path, gold = gold_dir
    speed = [t for t in gold.tests if "markupsafe._speedups" in t]
    Q = dict(prompt_tokens=1000, completion_tokens=200)

    def second_query(messages):
        # the memory pool: the first attempt's title is shown to the query model
        assert "Speedups header damage" in messages[-1]["content"]
        return reply(_query(speed[:4], "Truncated speedups module"), **Q)

    dockerfile = ("FROM gold\n# the damage\nENV MARKER=1\nRUN printf 'JUNK' \\\n"
                  f"  | dd of={SO} bs=1 count=4 conv=notrunc status=none\n")
    script = [
        # attempt 0: query + refinement, a real degradation, the Dockerfile, finish -> verified
        reply(_query(speed[:8], "Speedups header damage"), **Q),
        reply(_query(speed[:6], "Speedups header damage"), **Q),
        reply("I will corrupt the module.", tool_calls=[tool_call("execute_bash", {"command": CORRUPT})]),
        reply(tool_calls=[tool_call("execute_bash",
                                    {"command": "cd /testbed && python -m pytest -q tests 2>&1 | tail -2"})]),
        reply(tool_calls=[tool_call("str_replace_editor", {"command": "create", "path": "/cligym-out/Dockerfile",
                                                           "file_text": dockerfile})]),
        reply(tool_calls=[tool_call("finish", {"summary": "corrupted the ELF header"})]),
        # ... asked for its repair, it writes an admin's: a reinstall from the image's wheelhouse
        reply(tool_calls=[tool_call("execute_bash", {"command": HONEST_REINSTALL})]),
        reply(tool_calls=[tool_call("finish", {"summary": "repair written"})]),
        # attempt 1: a Dockerfile that does not redo the change -> not reproducible (asked
        # for its repair, it writes none)
        second_query,
        reply(_query(speed[:4], "Truncated speedups module"), **Q),
        reply(tool_calls=[tool_call("execute_bash", {"command": f": > {SO}"})]),
        reply(tool_calls=[tool_call("execute_bash", {
            "command": "mkdir -p /cligym-out && echo 'RUN true' > /cligym-out/Dockerfile"})]),
        reply(tool_calls=[tool_call("finish", {})]),
        reply(tool_calls=[tool_call("finish", {"summary": "no repair"})]),
        # attempt 2: no usable query, even after the correction request -> bad_query
        reply("I would rather chat.", **Q),
        reply("Still no JSON.", **Q),
        # attempt 3: the refinement is unusable (the draft is kept); the agent breaks things
        # and only talks until the step limit (5), without its Dockerfile; the tests fail, so
        # it gets a last turn, in which it writes the Dockerfile -> verified
        reply(_query(speed[:3], "Unfinished business"), **Q),
        reply("not json", **Q),
        reply("{broken", **Q),
        reply(tool_calls=[tool_call("execute_bash", {"command": CORRUPT})]),
        reply("Let me think about what else to do."), reply("And what else."),  # two replies without a call,
        reply(tool_calls=[tool_call("think", {"thought": "more?"})]),           # never three in a row: no
        reply("Let me think about what else to do."),                          # format_error, the step limit

        reply(tool_calls=[tool_call("execute_bash", {"command": "mkdir -p /cligym-out && echo \"RUN "
                                                                + CORRUPT.replace("JUNK", "XXXX")
                                                                + "\" > /cligym-out/Dockerfile"})]),
        reply(tool_calls=[tool_call("finish", {"summary": "recorded late"})]),
        # ... its repair asks the package index (no network): the derived one is proven instead
        reply(tool_calls=[tool_call("execute_bash", {"command": FROM_THE_INDEX})]),
        reply(tool_calls=[tool_call("finish", {"summary": "repair written"})]),
        # attempt 4: the endpoint refuses one request (a request it cannot take): that agent
        # stops with model_error, nothing was broken, and the run goes on
        reply(_query(speed[:2], "Refused midway"), **Q),
        reply(_query(speed[:2], "Refused midway"), **Q),
        error(400, "Invalid value for 'tool_choice': unsupported in this deployment"),
    ]
    server = scripted_server(script)
    run = tmp_path / "run"
    proc = _cli("invert", str(path), "-o", str(run), "--agent", "llm", "--model", "scripted", "--base-url",
                server.base_url, "-n", "5", "--refine-rate", "1", "--max-steps", "5", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert server.remaining == 0  # the whole script was used, nothing more was asked

    assert summary["attempts"] == 5 and summary["verified"] == 2
    assert summary["discard_reasons"] == {"not_reproducible": 1, "bad_query": 1, "no_failure": 1}
    assert summary["reproduction_checked"] == 3 and summary["reproduced"] == 2
    assert summary["agent_stop_reasons"] == {"finished": 2, "max_steps": 1, "model_error": 1}
    # tokens: every answer the server gave, counted once (the refused request gave none)
    queries = sum(1 for r in server.requests if r["messages"][0]["content"] == QUERY_SYSTEM)
    assert queries == 11  # 2 + 2 + 2 (a correction request) + 3 (a refinement and its correction) + 2
    answered = len(server.requests) - queries - 1
    assert summary["prompt_tokens"] == 1000 * queries + 10 * answered
    assert summary["completion_tokens"] == 200 * queries + 5 * answered
    assert summary["tokens_per_verified"] == (summary["prompt_tokens"] + summary["completion_tokens"]) / 2

    candidates = [json.loads((run / "candidates" / f"{i:04d}.json").read_text()) for i in range(5)]
    first = candidates[0]
    assert first["status"] == "verified" and first["refined"] is True
    assert first["prompt_tokens"] == 2000 + 6 * 10 and first["completion_tokens"] == 400 + 6 * 5
    assert first["FAIL_TO_PASS"] == speed[:6] and first["reproduced"] is True
    assert first["dockerfile"] == [f"RUN printf 'JUNK'   | dd of={SO} bs=1 count=4 conv=notrunc status=none"]
    assert any(d.startswith("ENV MARKER=1") for d in first["dropped_lines"])
    assert candidates[1]["reproduced"] is False and "fewer" in candidates[1]["reason"]
    assert candidates[2]["discard_kind"] == "bad_query" and candidates[2]["agent"] is None
    assert candidates[3]["refined"] is False and candidates[3]["agent"]["stop_reason"] == "max_steps"
    assert candidates[3]["agent"]["last_turn"] is True and candidates[3]["status"] == "verified"
    assert candidates[0]["agent"]["last_turn"] is False
    assert [c["agent"]["recovery"] for c in candidates[:2]] == [True, False] and candidates[3]["agent"]["recovery"]
    assert candidates[3]["query"]["title"] == "Unfinished business"
    assert candidates[4]["agent"]["stop_reason"] == "model_error" and candidates[4]["agent"]["steps"] == 0

    task = json.loads((run / "tasks" / first["instance_id"] / "instance.json").read_text())
    assert task["origin"] == "agent" and task["changed_paths"] == [SO]
    assert task["solution"].startswith("#!/bin/sh") and "--find-links /opt/wheelhouse" in task["solution"]
    assert task["solution_origin"] == "degrader" and task["offline_fair"] and task["FAIL_TO_PASS"] == speed[:6]
    late = json.loads((run / "tasks" / candidates[3]["instance_id"] / "instance.json").read_text())
    assert late["solution_origin"] == "derived" and late["offline_fair"] and "base64" not in late["solution"]
    trajectory = run / first["agent"]["trajectory"]
    assert json.loads(trajectory.read_text())["final_metrics"]["extra"]["stop_reason"] == "finished"
    if HARBOR_PY.exists():
        check = ("import sys, json; from harbor.models.trajectories import Trajectory; "
                 "Trajectory.model_validate(json.load(open(sys.argv[1]))); print('atif-ok')")
        checked = subprocess.run([str(HARBOR_PY), "-c", check, str(trajectory)], capture_output=True, text=True)
        assert "atif-ok" in checked.stdout, checked.stderr

    # the agent-made task is held to the same rules as operator tasks: it re-verifies from
    # scratch, exports, and Harbor's oracle gets reward 1 and doing nothing 0
    verified = _cli("verify", str(run), "--gold", str(path), "--json")
    assert verified.returncode == 0 and all(r["ok"] for r in json.loads(verified.stdout)), verified.stdout[-2000:]
    # both repairs are proven offline: the default export (offline-fair only) holds both tasks
    assert _cli("export", str(run), "-o", str(tmp_path / "tasks")).returncode == 0
    validated = _cli("validate", str(tmp_path / "tasks"), "--json", "-q")
    results = json.loads(validated.stdout)
    assert [(r["oracle"]["reward"], r["nop"]["reward"]) for r in results] == [(1.0, 0.0)] * 2

    # a second call resumes: finished attempts are not redone; one whose record is missing is,
    # with the memory pool of the attempts before it, and a task an interrupted try of it left
    # behind is dropped
    (run / "candidates" / "0002.json").unlink()
    orphan = run / "tasks" / "orphan"
    orphan.mkdir()
    (orphan / "instance.json").write_text(json.dumps({**task, "instance_id": "orphan", "attempt": 2}))

    def redo_query(messages):
        pool = messages[-1]["content"].split("Assignments already written")[1].split("Requirements:")[0]
        assert "Speedups header damage" in pool and "Truncated speedups module" in pool
        assert "Unfinished business" not in pool  # attempt 3 comes after attempt 2
        return reply("no JSON this time either", **Q)

    asked = len(server.requests)
    server.add(redo_query, reply("nor now", **Q))
    again = _cli("invert", str(path), "-o", str(run), "--agent", "llm", "--model", "scripted", "--base-url",
                 server.base_url, "-n", "5", "--refine-rate", "1", "--max-steps", "5", "--json")
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["verified"] == 2 and len(server.requests) == asked + 2
    assert not orphan.exists() and (run / "tasks" / first["instance_id"]).is_dir()


class InTurn(DegradingPolicy):
    """The scripted degrading agent, its degradations taken in the order given, one per
    attempt (attempts made one at a time, no refinement)."""

    def __init__(self, kinds: list[int]) -> None:
        super().__init__(kinds)
        self.asked: list[str] = []

    def pick(self, digest: str) -> int:
        if digest not in self.asked:
            self.asked.append(digest)
        return self.kinds[self.asked.index(digest)]


def test_agent_made_tasks_are_repaired_offline_and_exported_by_default(gold_dir, scripted_server, tmp_path,
                                                                        runtime):
    """Asked for its repair after its breakage, the agent writes: an admin's chmod (proven,
    kept); a reinstall from the package index (fails with no network: the repair derived
    from what the image holds, a reinstall from its wheelhouse, is proven instead); the
    original extension's bytes in base64 (refused untried: it carries far more than
    CARRY_LIMIT of gold; the derived reinstall again); and, for a standard-library module
    nothing in the image holds, an apt reinstall (no network) while the derived one would
    carry the module's bytes: discarded, with both reasons. Every kept task is offline-fair
    by the one measure, and the default export (offline-fair only) holds them all."""
    path, _ = gold_dir
    server = scripted_server([InTurn([2, 1, 0, 6])] * 200)
    run = tmp_path / "run"
    summary = invert_with_agent(path, run, ModelClient(ModelConfig(model="scripted", base_url=server.base_url)),
                                attempts=4, refine_rate=0.0, limits=AgentLimits(max_steps=8, max_seconds=300),
                                runtime=runtime)
    candidates = [json.loads((run / "candidates" / f"{i:04d}.json").read_text()) for i in range(4)]
    assert summary.verified == 3 and summary.discard_reasons == {"no_offline_repair": 1}, candidates[3]["reason"]
    assert all(c["agent"]["recovery"] for c in candidates)
    tasks = [load(Task, RunDir(run).task_record(c["instance_id"])) for c in candidates[:3]]
    assert [t.solution_origin for t in tasks] == ["degrader", "derived", "derived"]
    assert all(t.offline_fair and t.carried_bytes is not None and t.carried_bytes <= CARRY_LIMIT for t in tasks)
    assert "chmod 0755 /usr/bin/python3.11" in tasks[0].solution
    assert all("--no-index --find-links /opt/wheelhouse" in t.solution and "base64" not in t.solution
               for t in tasks[1:])
    reason = candidates[3]["reason"]
    assert reason.startswith("the repair: ") and "; the fallback: no solution could be derived: the image holds " \
        "no copy of" in reason, reason

    exported = export(run, "harbor", tmp_path / "tasks", runtime=runtime)
    assert sorted(exported.tasks) == sorted(t.instance_id for t in tasks) and not exported.left_out


def test_unreachable_endpoint_is_one_line_and_writes_no_attempt(gold_dir, tmp_path):
    path, _ = gold_dir
    run = tmp_path / "run"
    quick = tmp_path / "model.toml"  # the default retries (5, backed off up to 16 s) take 31 s
    quick.write_text("max_retries = 1\nbackoff_base = 0.1\n")
    proc = _cli("invert", str(path), "-o", str(run), "--agent", "llm", "--model", "m",
                "--base-url", "http://127.0.0.1:9/v1", "--model-config", str(quick), "-n", "1", "-q")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 3 and len(lines) == 1 and "cannot reach the model endpoint" in lines[0], proc.stderr
    assert not (run / "candidates").exists()


def test_refused_key_stops_the_run(gold_dir, scripted_server, tmp_path):
    path, _ = gold_dir
    server = scripted_server([reply("unused")], api_key="right")
    proc = _cli("invert", str(path), "-o", str(tmp_path / "run"), "--agent", "llm", "--model", "m",
                "--base-url", server.base_url, "-n", "1", "-q", env={"CLIGYM_API_KEY": "wrong"})
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("cligym: error:"), proc.stderr
    assert not (tmp_path / "run" / "candidates").exists()


def test_bad_agent_arguments(gold_dir, tmp_path):
    path, _ = gold_dir
    no_model = _cli("invert", str(path), "-o", str(tmp_path / "r"), "--agent", "llm")
    assert no_model.returncode == 2 and "--model" in no_model.stderr
    unknown = _cli("invert", str(path), "-o", str(tmp_path / "r"), "--agent", "robot")
    assert unknown.returncode == 2 and "unknown agent" in unknown.stderr
    # the operator path's attempts learn from each other in order: no --workers there
    workers = _cli("invert", str(path), "-o", str(tmp_path / "r"), "--workers", "2")
    assert workers.returncode == 2 and "--workers is for --agent llm" in workers.stderr
    assert len(workers.stderr.strip().splitlines()) == 1
    from cligym.invert.agentic import invert_with_agent

    with pytest.raises(BadInput, match="refine-rate"):
        invert_with_agent(path, tmp_path / "r", object(), attempts=1, refine_rate=2.0)
