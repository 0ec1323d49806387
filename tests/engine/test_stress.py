"""Four cligym processes on one engine at once, as users run them: a dataset build, a
validate, an oracle rollout and `clean --images` (twice). Each succeeds: no process removes
an image or a container another one is using."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cligym.export.stage import export
from tests.engine.test_dataset_build import build_cmd, projects_file


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "cligym", *args]


@pytest.mark.slow
def test_a_build_a_validate_a_rollout_and_clean_at_once_all_succeed(runtime, markupsafe_run, tmp_path):
    tasks = tmp_path / "tasks"
    export(markupsafe_run / "run", "harbor", tasks, runtime=runtime)
    started = {
        "dataset build": subprocess.Popen(build_cmd(projects_file(tmp_path), tmp_path / "dataset", workers=2),
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
        "validate": subprocess.Popen(_cli("validate", str(tasks), "--json"), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True),
        "rollout": subprocess.Popen(_cli("rollout", str(tasks), "-o", str(tmp_path / "rollout"), "--agent", "oracle",
                                         "--workers", "2", "--json"), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True),
    }
    cleans = []
    for _ in range(2):  # while the others build and run
        time.sleep(20)
        cleans.append(subprocess.run(_cli("clean", "--images", "--json"), capture_output=True, text=True,
                                     timeout=300))
    ended = {}
    for name, proc in started.items():
        out, err = proc.communicate(timeout=2400)
        ended[name] = (proc.returncode, out, err)
    for name, (code, _, err) in ended.items():
        assert code == 0, f"{name} failed while the others ran: {err[-1500:]}"
    assert all(c.returncode == 0 for c in cleans), [c.stderr for c in cleans]
    rollout = json.loads(ended["rollout"][1])
    assert rollout["attempts"] == rollout["successes"] > 0  # the oracle repairs every task
    assert json.loads((Path(tmp_path) / "dataset" / "summary.json").read_text())["tasks"] >= 1
