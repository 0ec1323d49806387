"""``cligym validate`` on hand-made Harbor tasks in real containers: a task that lacks a
file is one failed result among the others (exit 1, every result in the report), an
output that cannot be written fails before any work (exit 2), and Ctrl-C or SIGTERM in the
middle of a task leaves no container or image of the run and says how to resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cligym.cli.signals import INTERRUPTED

SOLVE = "#!/bin/bash\ntouch /opt/fixed\n"
TEST = ("#!/bin/bash\n{pause}mkdir -p /logs/verifier\n"
        "if [ -f /opt/fixed ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")


def _task(root: Path, name: str, base_image: str, *, pause: str = "", without: str = "") -> Path:
    """A Harbor task: the oracle creates /opt/fixed, the verifier rewards its presence."""
    task = root / name
    files = {
        "task.toml": '[task]\nname = "cligym/test"\n',
        "instruction.md": "Make /opt/fixed exist.\n",
        "environment/Dockerfile": f"FROM {base_image}\nRUN mkdir -p /opt\n",
        "tests/test.sh": TEST.format(pause=pause),
        "solution/solve.sh": SOLVE,
    }
    for rel, text in files.items():
        if without and rel.startswith(without):
            continue
        path = task / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel.endswith(".sh"):
            path.chmod(0o755)
    return task


def _validate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cligym", "validate", *args, "-q"], capture_output=True,
                          text=True, timeout=900)


def test_a_task_lacking_files_fails_alone(tmp_path, base_image):
    export = tmp_path / "tasks"
    _task(export, "a-good", base_image)
    _task(export, "b-no-dockerfile", base_image, without="environment/")
    _task(export, "c-no-tests", base_image, without="tests/")
    _task(export, "d-no-solution", base_image, without="solution/")
    proc = _validate(str(export))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads((tmp_path / "tasks.validate.json").read_text())
    results = {r["task"]: r for r in report["results"]}
    assert sorted(results) == ["a-good", "b-no-dockerfile", "c-no-tests", "d-no-solution"]
    assert report["validated"] == 4 and report["ok"] == 1
    assert results["a-good"]["ok"] and results["a-good"]["oracle"]["reward"] == 1
    lacks = {"b-no-dockerfile": "environment/Dockerfile", "c-no-tests": "tests/test.sh",
             "d-no-solution": "solution/solve.sh"}
    for name, missing in lacks.items():
        detail = results[name]["oracle"]["detail"]
        assert not results[name]["ok"] and missing in detail and "\n" not in detail, detail
    failed_lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(("b-", "c-", "d-"))]
    assert len(failed_lines) == 3, proc.stderr


@pytest.mark.parametrize("where", ["file/report.json", "dir"])
def test_an_unwritable_report_fails_before_any_work(tmp_path, base_image, runtime, where):
    export = tmp_path / "tasks"
    _task(export, "a-good", base_image)
    (tmp_path / "file").write_text("not a directory")
    (tmp_path / "dir").mkdir()
    started = time.monotonic()
    proc = _validate(str(export), "-o", str(tmp_path / where))
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("cligym: error: cannot write the validation report")
    assert time.monotonic() - started < 60 and not (tmp_path / "tasks.validate.json").exists()


def _leftovers(runtime, pid: int) -> tuple[list[str], set[str]]:
    return runtime.labelled_containers(pid=pid), runtime.labelled_images(pid=pid)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_validate_cleans_up_and_says_how_to_resume(tmp_path, base_image, runtime, signum, code):
    export = tmp_path / "tasks"
    _task(export, "slow", base_image, pause="sleep 300\n")
    proc = subprocess.Popen([sys.executable, "-m", "cligym", "validate", str(export), "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not _leftovers(runtime, proc.pid)[0]:  # the oracle's container is up
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        time.sleep(2)  # into the solution or the slow verifier
        assert _leftovers(runtime, proc.pid)[1], "the task image should exist while it runs"
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == code, stderr
        assert stderr.strip().splitlines()[-1] == INTERRUPTED and "Traceback" not in stderr
        containers, images = _leftovers(runtime, proc.pid)
        assert not containers and not images, (containers, images)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        containers, images = _leftovers(runtime, proc.pid)
        runtime.remove_containers(containers)
        runtime.remove_images(images)
