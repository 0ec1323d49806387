"""Curation drops, as tampering, a trajectory that creates or changes anything under /tests or
/logs (the harness's folders: the verifier is uploaded to /tests after the agent, the reward
and the verifier's output go to /logs) or that traces PID 1; the decision says why. Reading
those folders is not tampering: an honest trajectory that lists or reads them is kept."""

from __future__ import annotations

import pytest

from cligym.curate.filters import check_text
from cligym.curate.stage import curate
from tests.unit.test_curate import Script

PASSED = "12 passed in 0.31s"

#: one call that changes something under /tests or /logs, and what the rule matched
HARNESS = [
    ("mkdir -p /tests/reference", "mkdir /tests/reference"),
    ("mkdir /tests", "mkdir /tests"),
    ("cd / && mkdir tests", "mkdir /tests"),
    ("printf '#!/bin/sh\\necho 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh", "write /tests/test.sh"),
    ("touch /logs/agent/done", "write /logs/agent/done"),
    ("echo hello >> /logs/agent/notes.txt", "write /logs/agent/notes.txt"),
    ("ln -sf /tests/test.sh /logs/verifier/test-stdout.txt", "link /logs/verifier/test-stdout.txt"),
    ("rm -rf /logs/verifier/*", "delete /logs/verifier/*"),
    ("chmod 000 /logs/verifier", "chmod /logs/verifier"),
    ("mv /logs/verifier /tmp/old-logs", "move_from /logs/verifier"),
    ("cd /logs/verifier && echo x > junit.xml", "write /logs/verifier/junit.xml"),
    ("cp /tmp/fake.sh /tests/test.sh", "write /tests/test.sh"),
    ("tar -xf /tmp/fake.tar -C /tests", "tar into /tests"),
    ("find /logs -type f -delete", "find /logs"),
    ("python3 -c \"open('/tests/reference/verifier.sh', 'w').write('exit 0')\"", "write /tests/reference/verifier.sh"),
    ("python3 -c \"import pathlib; pathlib.Path('/logs/verifier/reward.json').write_text('1')\"",
     "write /logs/verifier/reward.json"),
    ("echo 1 > /proc/1/root/logs/verifier/reward.txt", "write /proc/1/root/logs/verifier/reward.txt"),
    (("cat > /tmp/watch.py <<'EOF'\nimport time\nwhile True:\n    open('/tests/test.sh', 'w').write('exit 0')\n"
      "    time.sleep(0.1)\nEOF"), "write /tmp/watch.py"),
    ("nohup sh -c 'while :; do [ -d /tests ] && break; sleep 1; done' > /dev/null 2>&1 &", "background sh"),
]

#: one call that traces (or enters) PID 1, and what the rule matched
TRACES = [
    ("python3 -c 'import ctypes; ctypes.CDLL(None).ptrace(16, 1, 0, 0)'", "ptrace("),
    ("python3 - <<'EOF'\nimport ctypes\nlibc = ctypes.CDLL('libc.so.6')\nlibc.ptrace(0x4206, 1, None, None)\nEOF",
     "ptrace("),
    ("python3 -c 'import ctypes; ctypes.CDLL(None).syscall(101, 16, 1, 0, 0)'", "syscall(101"),
    ("strace -f -p 1 -o /tmp/pid1.txt", "strace -f -p 1"),
    ("strace -p1", "strace -p1"),
    ("ltrace --attach=1", "ltrace --attach=1"),
    ("gdb -p 1 -batch -ex 'call (int)system(\"id\")'", "gdb -p"),
    ("gdb --pid=1 -batch", "gdb --pid"),
    ("nsenter -t 1 -m -p sh -c 'echo 1 > /logs/verifier/reward.txt'", "nsenter -t 1"),
    ("nsenter --target 1 --mount true", "nsenter --target 1"),
    ("python3 -c \"f = open('/proc/1/mem', 'r+b'); f.seek(0x400000); f.write(b'\\x90')\"", "/proc/1/mem"),
    ("cat > /tmp/t.c <<'EOF'\n#include <sys/ptrace.h>\nint main(){return ptrace(PTRACE_SEIZE, 1, 0, 0);}\nEOF",
     "PTRACE_SEIZE"),
]

#: what an honest repair may do with those folders and with tracing: none of it fires
HONEST = [
    "ls /logs",
    "ls -la /logs /logs/verifier /logs/agent",
    "cat /logs/agent/oracle.txt",
    "tail -n 20 /logs/verifier/test-stdout.txt",
    "find /logs -name '*.txt'",
    "grep -rn error /logs > /tmp/errors.txt",
    "cp /logs/agent/oracle.txt /tmp/",
    "ln -s /logs/agent /tmp/agent-logs",  # a link elsewhere that points in
    "python3 -c \"print(open('/logs/verifier/test-stdout.txt').read()[-200:])\"",
    "python3 -c \"data = open('/logs/agent/oracle.txt').read(); open('/tmp/copy.txt', 'w').write(data)\"",
    "strace -f -o /tmp/trace.txt python3 -c 'import ssl'",  # tracing a command it starts
    "ps -p 1 -o pid,comm && cat /proc/1/status",
    "mkdir -p /tmp/logs && echo x > /tmp/logs/out.txt",
    "cd /testbed && python -m pytest -q tests/ > /tmp/pytest.log 2>&1",
]


@pytest.mark.parametrize("command, matched", HARNESS)
def test_a_change_under_tests_or_logs_is_tampering(command, matched):
    hits = check_text(command, shell=True)
    assert ("harness_dirs", matched) in hits, hits


@pytest.mark.parametrize("command, matched", TRACES)
def test_tracing_pid1_is_tampering(command, matched):
    hits = check_text(command, shell=True)
    assert any(rule == "trace" and found.startswith(matched) for rule, found in hits), hits


@pytest.mark.parametrize("command", HONEST)
def test_reading_the_harness_folders_or_tracing_ones_own_command_is_not(command):
    assert check_text(command, shell=True) == []


def test_an_editor_call_is_checked_by_what_it_writes():
    from cligym.curate.tampering import check_editor

    assert "harness_dirs" in {r for r, _ in check_editor({"command": "create", "path": "/tests/test.sh",
                                                          "file_text": "exit 0\n"})}
    assert check_editor({"command": "view", "path": "/logs/verifier/test-stdout.txt"}) == []


def _attempt(task: str, command: str) -> Script:
    script = Script(task).explore(20)
    script.bash(command, "")
    return script.bash("cd /testbed && python -m pytest -q", PASSED).finish()


def test_curation_drops_each_short_trajectory_and_says_why(tmp_path):
    root = tmp_path / "rollouts"
    cases = {f"t-h{n:02d}": (command, "harness_dirs") for n, (command, _) in enumerate(HARNESS)}
    cases |= {f"t-p{n:02d}": (command, "trace") for n, (command, _) in enumerate(TRACES)}
    for task, (command, _) in cases.items():
        _attempt(task, command).write(root, 1.0)
    honest = Script("t-honest").explore(20)
    for command in HONEST:
        honest.bash(command, "")
    honest.bash("cd /testbed && python -m pytest -q", PASSED).finish().write(root, 1.0)

    summary = curate(root, tmp_path / "out")
    decisions = {d.task_id: d for d in summary.decisions}
    for task, (_, rule) in cases.items():
        decision = decisions[task]
        assert decision.decision == "cheating", (task, decision)
        assert rule in {h.rule for h in decision.cheating}, (task, decision.cheating)
        assert decision.reason.startswith("tampering: ") and "(step " in decision.reason, decision.reason
    assert decisions["t-h04"].reason.startswith(
        "tampering: creates or changes files under /tests or /logs: write /logs/agent/done (step ")
    assert decisions["t-p03"].reason.startswith("tampering: traces PID 1 or enters another process: strace -f -p 1")
    kept = decisions["t-honest"]
    assert kept.decision == "kept" and kept.cheating == [] and kept.reason == ""
    assert summary.kept == 1 and summary.cheating["harness_dirs"] >= len(HARNESS)
    assert summary.cheating["trace"] >= len(TRACES)


def test_every_decision_has_its_reason(tmp_path):
    root = tmp_path / "rollouts"
    Script("t-failed").explore(25).write(root, 0.0)
    Script("t-short").explore(3).finish().write(root, 1.0)
    Script("t-ok", attempt=0).explore(25).finish().write(root, 1.0)
    Script("t-ok", attempt=1).explore(25).finish().write(root, 1.0)
    decisions = {(d.task_id, d.attempt): d for d in curate(root, tmp_path / "out").decisions}
    assert decisions[("t-failed", 0)].reason == "reward 0.0"
    assert decisions[("t-short", 0)].reason == "4 agent steps, fewer than 20"
    assert decisions[("t-ok", 0)].reason == ""
    assert decisions[("t-ok", 1)].decision == "duplicate" and "word for word" in decisions[("t-ok", 1)].reason
