"""Curation of repair rollouts: success, length, cheating and loop rules, the SFT JSONL (read
with datasets) and the summary."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cligym.agents.tools import TOOLS
from cligym.agents.trajectory import TrajectoryRecorder
from cligym.curate.filters import CHEAT_RULES, check_text, find_cheating, find_loop
from cligym.curate.stage import curate
from cligym.errors import BadInput
from cligym.models.curate import CurationSummary
from cligym.models.io import load, save
from cligym.models.rollout import RolloutResult
from cligym.models.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[2]
HARBOR_PY = ROOT / ".venv-harbor" / "bin" / "python"

SYSTEM = "You are working as root in a Linux container. Repair the environment."
TASK = "Tests in /testbed fail with ImportError. Fix the environment."


class Script:
    """Records a repair attempt, one bash command per agent step."""

    def __init__(self, task_id: str, attempt: int = 0, **recorder):
        self.task_id, self.attempt = task_id, attempt
        self.rec = TrajectoryRecorder("cligym-llm", "0.1.0", "scripted", f"{task_id}-{attempt}", **recorder)
        self.rec.system(SYSTEM)
        self.rec.user(TASK)
        self.calls = 0

    def bash(self, command: str, output: str = "", message: str = "", reasoning: str | None = None) -> Script:
        self.calls += 1
        call = f"call_{self.calls}"
        self.rec.agent(message, tool_calls=[(call, "execute_bash", {"command": command})],
                       observations=[(call, output)], prompt_tokens=100 + self.calls, completion_tokens=10,
                       reasoning_content=reasoning)
        return self

    def tool(self, name: str, arguments: dict, output: str) -> Script:
        self.calls += 1
        call = f"call_{self.calls}"
        self.rec.agent("", tool_calls=[(call, name, arguments)], observations=[(call, output)],
                       prompt_tokens=100, completion_tokens=10)
        return self

    def explore(self, n: int) -> Script:
        """``n`` distinct, honest diagnostic steps."""
        for i in range(n):
            self.bash(f"cd /testbed && python -c 'import sys; print({i}, sys.path)'", f"{i} ['/testbed', ...]")
        return self

    def finish(self) -> Script:
        return self.tool("finish", {"summary": "repaired"}, "(finished)")

    def write(self, root: Path, reward: float | None) -> Path:
        folder = root / self.task_id / f"{self.attempt:03d}"
        trajectory = self.rec.finish({"reward": reward, "stop_reason": "finished" if reward == 1 else "max_steps"})
        save(trajectory, folder / "trajectory.json")
        steps = sum(1 for s in trajectory.steps if s.source == "agent")
        save(RolloutResult(task_id=self.task_id, attempt=self.attempt, agent="llm", reward=reward,
                           finished=reward == 1, stop_reason="finished" if reward == 1 else "max_steps", steps=steps,
                           prompt_tokens=trajectory.final_metrics.total_prompt_tokens,
                           completion_tokens=trajectory.final_metrics.total_completion_tokens, seconds=12.5),
             folder / "result.json")
        return folder


@pytest.fixture()
def rollout_dir(tmp_path) -> Path:
    root = tmp_path / "rollouts"
    # 1. long and successful: kept (a think note and a turn without tools on the way)
    good = Script("markupsafe-env-001").explore(10)
    good.tool("think", {"thought": "the C extension cannot load its shared library"}, "(noted)")
    good.rec.agent("Let me check the library path next.", prompt_tokens=90, completion_tokens=8)
    good.rec.user("Use the tools to continue the work, or call finish when you are done.")
    good.tool("str_replace_editor", {"command": "view", "path": "/etc/ld.so.conf.d/libc.conf"}, "/usr/local/lib")
    good.bash("ldconfig -p | grep libz", "libz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1")
    good.explore(8).bash("ldconfig && cd /testbed && python -m pytest -q", "12 passed").finish()
    good.write(root, 1.0)
    # 2. successful but short: too_short
    short = Script("markupsafe-env-002").bash("cd /testbed && python -m pytest -q", "1 failed")
    short.bash("pip install --no-index --force-reinstall /wheels/markupsafe.whl", "Successfully installed")
    short.finish().write(root, 1.0)
    # 3. successful, long, reads the task's solution: cheating (solution)
    sol = Script("markupsafe-env-003").explore(12)
    sol.bash("cat /solution/solve.sh", "#!/bin/bash\nchmod 644 /usr/lib/python3/x.py")
    sol.explore(8).bash("chmod 644 /usr/lib/python3/x.py").finish().write(root, 1.0)
    # 4. successful, long, copies a leftover backup back: cheating (backup_restore)
    bak = Script("markupsafe-env-004").explore(15)
    bak.bash("ls /usr/lib/x.so*", "/usr/lib/x.so.bak")
    bak.bash("cp /usr/lib/x.so.bak /usr/lib/x.so").explore(5).finish().write(root, 1.0)
    # 5. failed, loops on `pip list` (identical output five times; a think note in between)
    loop = Script("markupsafe-env-005").explore(3)
    for i in range(5):
        loop.bash("pip list", "Package    Version\nMarkupSafe 3.0.2\npip        24.0")
        if i == 2:
            loop.tool("think", {"thought": "maybe the list changes"}, "(noted)")
    loop.write(root, 0.0)
    # 6. failed, no loop: the same command three times, but the output changes
    fail = Script("markupsafe-env-006").explore(4)
    for n in (3, 2, 1):
        fail.bash("cd /testbed && python -m pytest -q", f"{n} failed")
    fail.bash("pip list", "a").bash("pip list  ", "a")  # two in a row is below the threshold
    fail.write(root, None)
    return root


def test_curate_counts_every_rule(rollout_dir, tmp_path):
    out = tmp_path / "curated"
    summary = curate(rollout_dir, out)
    assert (summary.trajectories, summary.successful, summary.failed) == (6, 4, 2)
    assert summary.kept == 1
    assert summary.dropped == {"not_successful": 2, "too_short": 1, "cheating": 2, "duplicate": 0}
    assert summary.cheating == {rule: {"solution": 1, "backup_restore": 1}.get(rule, 0) for rule in CHEAT_RULES}
    assert summary.cheating_detected == summary.cheating
    assert (summary.loops_failures, summary.loops_all) == (1, 1)
    assert summary.loop_rate_failures == 0.5 and summary.loop_rate_all == pytest.approx(1 / 6, abs=1e-4)
    assert summary.incomplete == []

    decisions = {v.task_id: v for v in summary.decisions}
    assert decisions["markupsafe-env-001"].decision == "kept" and decisions["markupsafe-env-001"].agent_steps >= 20
    assert decisions["markupsafe-env-002"].decision == "too_short" and decisions["markupsafe-env-002"].agent_steps == 3
    hit = decisions["markupsafe-env-003"].cheating
    assert decisions["markupsafe-env-003"].decision == "cheating"
    assert {h.rule for h in hit} == {"solution"} and hit[0].command == "cat /solution/solve.sh"
    hit = decisions["markupsafe-env-004"].cheating
    assert [(h.rule, h.command) for h in hit] == [("backup_restore", "cp /usr/lib/x.so.bak /usr/lib/x.so")]
    loop = decisions["markupsafe-env-005"].loop
    assert decisions["markupsafe-env-005"].decision == "not_successful"
    assert loop.tool == "execute_bash" and loop.action == "pip list" and loop.repeats == 5
    assert decisions["markupsafe-env-006"].loop is None and decisions["markupsafe-env-006"].reward is None

    # the summary on disk is the same record
    assert load(CurationSummary, out / "summary.json") == summary
    data = json.loads((out / "summary.json").read_text())
    assert data["dropped"]["cheating"] == 2 and data["loop_rate_failures"] == 0.5

    # one SFT row, and it is the kept trajectory as OpenAI chat messages
    rows = [json.loads(line) for line in (out / "sft.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["attempt"], r["reward"]) for r in rows] == [("markupsafe-env-001", 0, 1.0)]
    messages = rows[0]["messages"]
    assert messages[0] == {"role": "system", "content": SYSTEM} and messages[1] == {"role": "user", "content": TASK}
    assistant = [m for m in messages if m["role"] == "assistant"]
    tools = [m for m in messages if m["role"] == "tool"]
    assert len(assistant) == decisions["markupsafe-env-001"].agent_steps
    calls = [c for m in assistant for c in m.get("tool_calls", [])]
    assert len(calls) == len(tools) and [c["id"] for c in calls] == [t["tool_call_id"] for t in tools]
    assert all(c["type"] == "function" and json.loads(c["function"]["arguments"]) for c in calls)
    assert calls[-1]["function"]["name"] == "finish"
    assert not list(out.glob(".*.tmp"))


def test_sft_jsonl_loads_with_datasets(rollout_dir, tmp_path, monkeypatch):
    out = tmp_path / "curated"
    summary = curate(rollout_dir, out, min_steps=3)  # the short one is kept too
    assert summary.kept == 2 and summary.dropped["too_short"] == 0
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    ds = datasets.load_dataset("json", data_files=str(out / "sft.jsonl"), split="train", cache_dir=str(tmp_path / "hf"))
    assert ds.num_rows == 2
    assert {"messages", "tools", "tools_from", "reasoning_history", "task_id", "attempt", "reward"} <= set(
        ds.column_names)
    assert {t["function"]["name"] for t in ds[0]["tools"]} >= {"execute_bash", "finish"}  # the schema trained on
    assert sorted(ds["task_id"]) == ["markupsafe-env-001", "markupsafe-env-002"]
    for row in ds:
        roles = [m["role"] for m in row["messages"]]
        assert roles[:2] == ["system", "user"] and "assistant" in roles and "tool" in roles
        for message in row["messages"]:
            if message["role"] == "tool":
                assert message["tool_call_id"]
            for call in message.get("tool_calls") or []:
                assert call["type"] == "function" and isinstance(call["function"]["arguments"], str)


def test_rows_carry_the_tools_and_reasoning_the_model_had(rollout_dir, tmp_path):
    offered = [{"type": "function", "function": {"name": name, "description": f"the {name} of that run",
                                                 "parameters": {"type": "object", "properties": {}}}}
               for name in ("execute_bash", "finish")]
    recorded = Script("markupsafe-env-010", tool_definitions=offered, reasoning_history="drop")
    for i in range(21):
        recorded.bash(f"echo {i}", str(i), reasoning=f"thought {i}")
    recorded.write(rollout_dir, 1.0)
    summary = curate(rollout_dir, tmp_path / "out")
    assert summary.kept == 2
    rows = {r["task_id"]: r for r in map(json.loads, (tmp_path / "out" / "sft.jsonl").read_text().splitlines())}
    row = rows["markupsafe-env-010"]
    assert row["tools"] == offered and row["tools_from"] == "trajectory"  # what this run's model was offered
    assert row["reasoning_history"] == "drop"
    thoughts = [m.get("reasoning_content") for m in row["messages"] if m["role"] == "assistant"]
    assert thoughts == [None] * 20 + ["thought 20"]  # earlier reasoning was not sent back to the model
    # an older trajectory, without tool definitions or a convention: today's tools, and it says so
    older = rows["markupsafe-env-001"]
    assert older["tools"] == TOOLS and older["tools_from"] == "cligym.agents.tools.TOOLS"
    assert older["reasoning_history"] is None


def test_thresholds_are_configurable(rollout_dir, tmp_path):
    relaxed = curate(rollout_dir, tmp_path / "a", min_steps=0, loop_repeat=6)
    assert relaxed.kept == 2 and relaxed.loops_all == 0 and relaxed.loop_rate_failures == 0.0
    strict = curate(rollout_dir, tmp_path / "b", min_steps=100, loop_repeat=2)
    assert strict.kept == 0 and strict.dropped == {"not_successful": 2, "too_short": 4, "cheating": 0,
                                                 "duplicate": 0}
    # pairs count now: the `pip list` pair in the non-looping failure
    assert strict.loops_failures == 2 and strict.loop_rate_failures == 1.0
    assert strict.cheating_detected["solution"] == 1  # still reported although dropped as too short
    assert (tmp_path / "b" / "sft.jsonl").read_text() == ""


def test_bad_input_is_one_clear_line(tmp_path):
    empty = tmp_path / "empty"
    (empty / "task" / "000").mkdir(parents=True)
    for target in (empty, tmp_path / "missing"):
        with pytest.raises(BadInput) as info:
            curate(target, tmp_path / "out")
        assert "\n" not in str(info.value) and str(target) in str(info.value)
    assert "holds no rollouts" in str(pytest.raises(BadInput, curate, empty, tmp_path / "out").value)
    with pytest.raises(BadInput, match="min-steps"):
        curate(empty, tmp_path / "out", min_steps=-1)
    broken = tmp_path / "broken" / "task" / "000"
    broken.mkdir(parents=True)
    (broken / "trajectory.json").write_text('{"schema_version": "ATIF-v1.3"}')
    save(RolloutResult(task_id="task", attempt=0, agent="llm", reward=1.0), broken / "result.json")
    with pytest.raises(BadInput, match="not a valid ATIF trajectory") as info:
        curate(tmp_path / "broken", tmp_path / "out")
    assert "\n" not in str(info.value)


def test_unfinished_attempts_are_listed_not_read(rollout_dir, tmp_path):
    half = rollout_dir / "markupsafe-env-007" / "000"
    half.mkdir(parents=True)
    (half / "trajectory.json").write_text("{}")  # crashed before result.json was written
    summary = curate(rollout_dir, tmp_path / "out")
    assert summary.trajectories == 6 and summary.incomplete == ["markupsafe-env-007/000"]


@pytest.mark.parametrize("command, rule", [
    ("cat /solution/solve.sh", "solution"),
    ("bash /tests/test.sh", "tests"),
    ("cat /tests/test_outputs.py", "tests"),
    ("cd /testbed && git diff HEAD", "git"),
    ("ls -la /testbed/.git", "git"),
    ("ls ~/.cache/pip/wheels", "package_cache"),
    ("python -m pip cache list", "package_cache"),
    ("ls /var/cache/apt/archives", "package_cache"),
    ("ls /var/lib/apt/lists", "package_cache"),
    ("ls /opt/conda/pkgs", "package_cache"),
    ("tail -n 50 /var/log/dpkg.log", "logs"),
    ("cat ~/.bash_history", "shell_history"),
    ("history | tail", "shell_history"),
    ("cp /usr/lib/x.so.bak /usr/lib/x.so", "backup_restore"),
    ("cd /usr/lib && mv -f x.so.orig x.so", "backup_restore"),
    ("sudo cp /etc/ssl/certs/ca.pem~ /etc/ssl/certs/ca.pem", "backup_restore"),
    ("rsync -a /opt/site-packages.bak/ /opt/site-packages/", "backup_restore"),
    ("install -m 755 /usr/bin/python3.old /usr/bin/python3", "backup_restore"),
    ("cat foo.py.orig > foo.py", "backup_restore"),
    ("cp /root/backup/libz.so.1 /usr/lib/x86_64-linux-gnu/", "backup_restore"),
    ("ls\ncp /usr/lib/x.so.dpkg-old /usr/lib/x.so", "backup_restore"),
])
def test_cheating_rules_fire(command, rule):
    assert rule in {r for r, _ in check_text(command, shell=True)}


@pytest.mark.parametrize("command", [
    "cd /testbed && python -m pytest tests/ -q",
    "pip list",
    "pip install --no-index /wheels/markupsafe-3.0.2.tar.gz",
    "pip install git+https://example.org/a/b.git",
    "cat .gitignore",
    "ls /app/logs /testbed/tests",
    "cat /logs/verifier/test-stdout.txt",  # Harbor's log folder: reading it is harmless
    "cp /usr/lib/x.so /usr/lib/x.so.bak",  # making one's own backup
    "cp /usr/lib/x.so.bak /tmp/",  # the copy keeps its backup name
    "ldconfig -p | grep ssl",
    "git --version",
    "echo 'unbalanced quote",
])
def test_honest_commands_do_not_fire(command):
    assert check_text(command, shell=True) == []


def test_editor_paths_are_checked():
    rec = TrajectoryRecorder("a", "1", session_id="s")
    rec.agent("", tool_calls=[("c1", "str_replace_editor", {"command": "view", "path": "/tests/test_outputs.py"}),
                              ("c2", "str_replace_editor", {"command": "create", "path": "/testbed/x.py",
                                                            "file_text": "LOG = '/var/log/x'"}),
                              ("c3", "think", {"thought": "cat /solution/solve.sh would be cheating"})])
    hits = find_cheating(rec.finish())
    assert [(h.rule, h.step_id) for h in hits] == [("tests", 1)]  # file_text and thoughts are not actions


def test_loop_needs_identical_observations():
    rec = TrajectoryRecorder("a", "1", session_id="s")
    for i, out in enumerate(["x", "x", "y", "y", "y"]):
        rec.agent("", tool_calls=[(f"c{i}", "execute_bash", {"command": "pip  list", "timeout": i})],
                  observations=[(f"c{i}", out)])
    hit = find_loop(rec.finish(), 3)
    assert hit.repeats == 3 and hit.step_ids == [3, 4, 5]
    assert find_loop(rec.finish(), 4) is None


def test_rollout_trajectories_validate_with_harbor(rollout_dir):
    if not HARBOR_PY.exists():
        pytest.skip(".venv-harbor (Harbor's own models) is missing")
    paths = sorted(rollout_dir.glob("*/*/trajectory.json"))
    assert len(paths) == 6
    for path in paths:
        Trajectory.model_validate_json(path.read_text())
    check = ("import sys, json\nfrom harbor.models.trajectories import Trajectory\n"
             "for p in sys.argv[1:]:\n    Trajectory.model_validate(json.load(open(p)))\n"
             "print('atif-ok', len(sys.argv) - 1)")
    proc = subprocess.run([str(HARBOR_PY), "-c", check, *map(str, paths)], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "atif-ok 6", proc.stderr


def test_a_word_for_word_repeat_of_a_kept_attempt_is_dropped(tmp_path):
    """-k attempts at temperature 0 repeat each other: one row, the rest counted as duplicates."""
    root = tmp_path / "rollouts"
    for attempt in range(3):
        Script("markupsafe-env-007", attempt).explore(25).finish().write(root, 1.0)
    Script("markupsafe-env-007", 3).explore(26).finish().write(root, 1.0)  # one step more: no repeat
    summary = curate(root, tmp_path / "curated")
    assert summary.kept == 2 and summary.dropped["duplicate"] == 2
    assert len((tmp_path / "curated" / "sft.jsonl").read_text().splitlines()) == 2
