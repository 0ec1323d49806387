"""The verifier's own holes, closed, each shown on a real gold (markupsafe) or container.

- Console scripts are judged by what they run, whatever their name: a wheel whose console
  script is named ``python-xyz`` (its first line names the venv's interpreter), installed in
  gold, then reinstalled with ``python -m pip``, ``python3 -m pip``, ``python3.X -m pip`` or
  ``pip`` (each writes another first line), scores 1.
- Modules below the project's folders and distributions' metadata on sys.path: a new module
  in a folder of the project without ``__init__.py`` (a namespace package) or a new
  ``*.dist-info`` in the workdir is refused after an honest repair; a ``~`` folder an
  interrupted pip leaves in site-packages is removed, not judged.
- The sweep kills a process whose main thread has ended while its other threads run.
- The judge must say "N of N passed": an emptied judge, test list or key list is reward 0
  with its reason.
"""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import uuid
import zipfile
from pathlib import Path

import pytest

from cligym.runtime import ImageKind

from cligym.harness.bundle import busybox_bytes, script
from cligym.harness.images import build_broken
from cligym.harness.reference import gather
from cligym.harness.trial import build_task_image, judge_image
from cligym.layout import ExportDir, RunDir, TaskDir
from cligym.models.io import load
from cligym.models.task import Task
from tests.verifier_runs import solve_then_judge

REPAIRS = Path(__file__).parents[1] / "data" / "repairs"
WHEEL = "python_xyz-1.0-py3-none-any.whl"


def tiny_wheel() -> bytes:
    """A wheel whose only console script is named ``python-xyz``."""
    files = {
        "python_xyz/__init__.py": b"def main():\n    return 0\n",
        "python_xyz-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: python-xyz\nVersion: 1.0\n",
        "python_xyz-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: cligym-test\nRoot-Is-Purelib: true\n"
                                          b"Tag: py3-none-any\n",
        "python_xyz-1.0.dist-info/entry_points.txt": b"[console_scripts]\npython-xyz = python_xyz:main\n",
    }
    record = "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                     f"{len(data)}\n" for name, data in files.items())
    files["python_xyz-1.0.dist-info/RECORD"] = (record + "python_xyz-1.0.dist-info/RECORD,,\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return out.getvalue()


@pytest.fixture(scope="module")
def python_named_gold(runtime, gold_envs):
    """(markupsafe's gold, an image of it with the tiny wheel in its wheelhouse and installed
    with ``python -m pip``, a few gold tests)."""
    gold = gold_envs("markupsafe==3.0.2")
    data = base64.b64encode(tiny_wheel()).decode()
    line = (f"RUN echo {data} | base64 -d > /opt/wheelhouse/{WHEEL} "
            f"&& /opt/venv/bin/python -m pip install --no-index --no-deps /opt/wheelhouse/{WHEEL}")
    tag = f"cligym/test-python-named:{uuid.uuid4().hex[:12]}"
    build_broken(runtime, gold, [line], tag)
    tests = [t for t in gold.tests if t.startswith("tests/test_escape.py::")][:5]
    yield gold, tag, tests
    runtime.remove_image(tag)


@pytest.mark.parametrize("repair", [  # one in the default run (the issue's own command), all with -m slow
    "wheelhouse_python", *(pytest.param(r, marks=pytest.mark.slow)
                           for r in ("wheelhouse_python3", "wheelhouse_python_version", "wheelhouse_pip"))])
def test_a_console_script_named_python_is_judged_by_what_it_runs(repair, python_named_gold, runtime):
    gold, tag, tests = python_named_gold
    reference, pristine = gather(runtime, tag, instance_id="python-named", workdir=gold.workdir,
                                 test_command=gold.test_command, f2p=tests, p2p=[], order=tests)
    solution = (REPAIRS / f"{repair}.sh").read_text() + "\nhead -n 1 /opt/venv/bin/python-xyz\n"
    judged = judge_image(runtime, tag, reference, pristine, solution, gold, tests)
    assert judged.nothing.reward == 1.0, judged.nothing
    shebang = judged.fixed.output.strip().splitlines()[-1]
    assert judged.fixed.exit_code == 0 and shebang.startswith("#!/opt/venv/bin/python"), judged.fixed.output[-500:]
    assert judged.solved is not None and judged.solved.reward == 1.0, (shebang, judged.solved)
    # gold's interpreters are told apart by what they are; the script by nothing but what it runs
    assert {s for s in reference.spec if s.startswith("I ")} == {f"I /opt/venv/bin/{n}" for n in
                                                                  ("python", "python3", "python3.11")}
    assert not any(s.endswith("/python-xyz") for s in reference.spec), "a script is listed by its name"


#: A process whose main thread calls pthread_exit while another thread goes on.
THREADS = """import ctypes, threading, time
def spin():
    while True:
        time.sleep(0.05)
threading.Thread(target=spin).start()
ctypes.CDLL(None).pthread_exit(None)
"""
#: Each process but PID 1 that has a thread which is not a zombie: "pid state-of-each-thread".
LIVE = ('for d in /proc/[0-9]*; do [ "$d" = /proc/1 ] && continue; s=""; '
        'for t in "$d"/task/*; do read -r l < "$t/stat" 2>/dev/null || continue; r=${l##*) }; s="$s${r%% *}"; done; '
        'case "$s" in *[!ZX]*) echo "${d#/proc/} $s" ;; esac; done')


def test_the_sweep_kills_a_process_whose_main_thread_has_ended(runtime, base_image):
    """/proc/PID/stat of such a process says Z, as a zombie's does; its other thread runs."""
    with runtime.session(base_image) as session:
        session.put_files({"/tmp/bb/busybox": (busybox_bytes(), 0o755), "/tmp/sweep.sh": script("sweep.sh"),
                           "/tmp/threads.py": THREADS})
        session.exec(["sh", "-c", "sleep 3; nohup python3 /tmp/threads.py > /dev/null 2>&1 & sleep 1"], timeout=60)
        pythons = ("for d in /proc/[0-9]*; do read -r l < $d/stat; "
                   "case $l in *'(python3'*) echo \"${d#/proc/} ${l##*) }\";; esac; done")
        found = session.exec(["sh", "-c", pythons], timeout=60).output.split()
        assert found[1] == "Z", found  # the main thread is a zombie, the process is not
        pid = found[0]
        done = session.exec(["/tmp/bb/busybox", "sh", "-c", ". /tmp/sweep.sh; sweep; echo swept $?"], timeout=120)
        assert "swept 0" in done.output, done.output
        live = session.exec(["/tmp/bb/busybox", "sh", "-c", LIVE], timeout=60).output.split("\n")
        assert not [line for line in live if line.split(" ")[0] == pid], live


@pytest.fixture(scope="module")
def shadow_task(runtime, shadow_runs):
    """(a markupsafe task exported as Harbor whose breakage leaves some tests passing, its
    built image)."""
    root = shadow_runs("markupsafe==3.0.2")
    found = [(d, load(Task, RunDir(root / "run").task_record(d.name)))
             for d in ExportDir(root / "tasks").task_dirs()]
    task_dir = next(d for d, t in found if t.PASS_TO_PASS)
    tag = build_task_image(runtime, task_dir, ImageKind.VALIDATE)
    yield task_dir, tag
    runtime.remove_image(tag)


def oracle_then(task_dir: TaskDir, dest: Path, more: str, empty: str = "") -> TaskDir:
    """A copy of the task whose solution is the oracle's and then ``more``; with ``empty``,
    that file of tests/reference/ emptied (and no guard, which would refuse the change)."""
    shutil.copytree(task_dir.path, dest)
    copy = TaskDir(dest)
    copy.solve_sh.write_text(task_dir.solve_sh.read_text() + "\n" + more + "\n")
    copy.solve_sh.chmod(0o755)
    if empty:
        shutil.rmtree(copy.guard, ignore_errors=True)
        copy.harbor_compose.unlink(missing_ok=True)
        (copy.reference.path / empty).write_text("")
    return copy


#: What an honest repair leaves, and the verdict it gets: a plugin's parts the verifier
#: refuses, and pip's "~" stash, which it removes.
PLANTED = {
    "namespace_module": ("mkdir -p /testbed/docs && echo 'x = 1' > /testbed/docs/cligym_mod.py",
                         0.0, "/testbed/docs/cligym_mod.py is new and importable"),
    "workdir_dist_info": (("mkdir -p /testbed/x-1.0.dist-info && printf '[pytest11]\\nx = json\\n' "
                           "> /testbed/x-1.0.dist-info/entry_points.txt"), 0.0, "/testbed/x-1.0.dist-info/"),
    "dist_info_in_gold_folder": ("mkdir -p /testbed/tests/X.Dist-Info && : > /testbed/tests/X.Dist-Info/METADATA",
                                 0.0, "/testbed/tests/X.Dist-Info/METADATA is new and importable"),
    "pip_stash_entry_points": (("for sp in /opt/venv/lib/python3*/site-packages; do mkdir -p \"$sp/~x-1.0.dist-info\"; "
                                "printf '[pytest11]\\nx = json\\n' > \"$sp/~x-1.0.dist-info/entry_points.txt\"; done"),
                               1.0, "all "),
}


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_an_honest_repair_that_leaves_a_plugins_parts(planted, shadow_task, runtime, tmp_path):
    task_dir, tag = shadow_task
    more, reward, reason = PLANTED[planted]
    result = solve_then_judge(runtime, tag, oracle_then(task_dir, tmp_path / "task", more), "cligym")
    assert result.reward == reward and reason in result.detail, result


@pytest.mark.parametrize(("empty", "reason"), [
    ("judge.awk", "the judge (judge.awk) is empty"),
    ("tests.txt", "the task's test list does not hold its "),
    ("keys.tsv", "the task's report keys do not name its "),
])
def test_an_emptied_judge_test_list_or_key_list_scores_zero(empty, reason, shadow_task, runtime, tmp_path):
    task_dir, tag = shadow_task
    result = solve_then_judge(runtime, tag, oracle_then(task_dir, tmp_path / "task", "", empty=empty), "cligym")
    assert result.reward == 0.0 and f"reward 0: {reason}" in result.detail, result

