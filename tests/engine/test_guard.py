"""The verifier's guard in a task's container as Harbor's docker environment starts it (the
compose file's read-only mount and PATH, PID 1 ``sh -c "sleep infinity"``): what the agent's
commands can and cannot do to PID 1 and to the harness's later commands, and a link planted
where the harness writes the verifier's output."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cligym.runtime import ImageKind

from cligym.harness.trial import TEST_OUTPUT, build_task_image, run_oracle
from cligym.layout import ExportDir, TaskDir
from tests.verifier_runs import harbor_container, harbor_way

DATA = Path(__file__).parents[1] / "data"
#: A process of the agent's tries to trace PID 1, then a child of its own; prints both errnos.
TRACE = r"""
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
def seize(pid):
    return 0 if libc.ptrace(0x4206, pid, None, None) == 0 else ctypes.get_errno()
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
try:
    open("/proc/1/mem", "rb").close()
    mem = 0
except OSError as exc:
    mem = exc.errno
print("pid1", seize(1), "mem", mem, "child", seize(child))
os.kill(child, 9)
"""


@pytest.fixture(scope="module")
def task(runtime, markupsafe_harbor):
    """(a guarded exported task of markupsafe, its built image)."""
    found = ExportDir(markupsafe_harbor).task_dirs()
    assert found, "the markupsafe run exported no task"
    task = found[0]
    assert task.guard.is_dir() and task.harbor_compose.is_file()
    tag = build_task_image(runtime, task, ImageKind.VALIDATE)
    yield task, tag
    runtime.remove_image(tag)


def caps(session, command: list[str]) -> dict[str, str]:
    out = session.exec(command, timeout=60, timer=None).output
    return dict(line.split(":\t", 1) for line in out.splitlines() if line.startswith("Cap"))


def test_the_agents_commands_hold_one_capability_fewer_than_the_harness(runtime, task):
    task_dir, tag = task
    with harbor_container(runtime, tag, task_dir) as session:
        pid1 = caps(session, ["cat", "/proc/1/status"])
        agent = caps(session, ["bash", "-c", "cat /proc/self/status"])  # the launcher, as Harbor runs it
        nested = caps(session, ["bash", "-c", "bash -c 'bash -c \"cat /proc/self/status\"'"])
        harness = caps(session, ["cat", "/proc/self/status"])  # an exec that is not a bash -c
    dropped = int(pid1["CapBnd"], 16) & ~int(agent["CapBnd"], 16)
    assert bin(dropped).count("1") == 1, (pid1, agent)
    assert int(agent["CapPrm"], 16) & dropped == 0 and int(agent["CapEff"], 16) & dropped == 0
    assert nested["CapBnd"] == agent["CapBnd"]  # a nested bash drops nothing more
    assert harness["CapBnd"] == pid1["CapBnd"]


def test_the_agent_cannot_trace_pid1_but_can_trace_its_own_processes(runtime, task):
    task_dir, tag = task
    with harbor_container(runtime, tag, task_dir) as session:
        session.put_files({"/tmp/trace.py": (TRACE.encode(), 0o644)})
        guarded = session.exec(["bash", "-c", "python3 /tmp/trace.py"], timeout=60, timer=None).output
        bare = session.exec(["python3", "/tmp/trace.py"], timeout=60, timer=None).output  # not through the guard
    assert "pid1 1 mem 13 child 0" in guarded, guarded  # EPERM, EACCES, traced
    assert "pid1 0 mem 0 child 0" in bare, bare  # what the guard takes away


def judge_after(runtime, tag: str, task: TaskDir, attack: str) -> tuple[float | None, str, bytes, bytes, bool]:
    """(reward, verdict line, the shipped judge, the judge in the container afterwards,
    whether the verifier's output is a file of its own)."""
    with harbor_container(runtime, tag, task) as session:
        task.solve_sh.write_text("#!/bin/bash\n" + attack)
        run_oracle(session, task)
        result = harbor_way(session, task)
        judge = session.get_file("/tests/reference/judge.awk") or b""
        output = session.get_file(TEST_OUTPUT)
    return result.reward, result.detail, task.reference.shell("R_JUDGE").read_bytes(), judge, output is not None


def test_a_link_where_the_harness_writes_the_verifiers_output_empties_no_file(runtime, task, tmp_path):
    """Without the guard, the harness's own redirection follows the agent's link and
    empties the verifier's judge as root before the verifier starts (with an empty judge
    every listed test would pass); with it, the link is gone before anything is written."""
    task_dir, tag = task
    attack = (DATA / "harbor_only" / "stdout_symlink.sh").read_text()
    bare = TaskDir(tmp_path / "bare")
    shutil.copytree(task_dir.path, bare.path)
    shutil.rmtree(bare.guard)
    bare.harbor_compose.unlink()
    _, _, shipped, judge, _ = judge_after(runtime, tag, bare, attack)
    assert judge != shipped, "the link did not reach the judge: the attack shows nothing"
    guarded = TaskDir(tmp_path / "guarded")
    shutil.copytree(task_dir.path, guarded.path)
    reward, detail, shipped, judge, output = judge_after(runtime, tag, guarded, attack)
    assert judge == shipped and output and reward == 0.0 and detail.startswith("cligym verifier: reward 0: "), detail


#: Processes a sweep must not spare: one whose name makes its stat line read as a zombie's
#: (a newline and ") Z" in the name, which the kernel prints unescaped), one in a session of
#: its own; then the sweep, and what is left.
HIDING = r"""
mkfifo /tmp/f
bash -c 'printf "x) Z\n" > /proc/$$/comm; read x < /tmp/f' &
setsid bash -c 'read y < /tmp/f' &
sleep 0.5
. /tmp/sweep.sh
sweep
echo "swept=$?"
for d in /proc/[0-9]*; do echo "left ${d#/proc/} $(tr '\n' ' ' < $d/comm)"; done
"""


def test_no_process_hides_from_the_sweep_by_its_name(runtime, base_image):
    from cligym.harness.bundle import busybox_bytes, script

    with runtime.session(base_image, keepalive=("sh", "-c", "sleep infinity")) as session:
        session.put_files({"/tmp/busybox": (busybox_bytes(), 0o755), "/tmp/sweep.sh": (script("sweep.sh"), 0o644),
                           "/tmp/hide.sh": (HIDING, 0o644)})
        out = session.exec(["/tmp/busybox", "sh", "/tmp/hide.sh"], timeout=120, timer=None).output
    assert "swept=0" in out, out
    left = [line.split(" ", 2)[2] for line in out.splitlines() if line.startswith("left ")]
    assert not any(name.startswith("x) Z") or name.startswith("bash") for name in left), out
    assert any(name.startswith("sleep") for name in left), out  # the container's keep-alive stays
