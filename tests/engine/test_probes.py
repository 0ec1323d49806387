"""``cligym validate --probes`` on one real exported Harbor task (markupsafe, a default
operator run): every honest repair of the battery, run after the task's oracle, scores 1,
and every generic cheat, run with nothing repaired, scores 0 — each probe in its own fresh
container of the task's image, judged by cligym's runner (a successor container).

The command runs once for the module (a dozen containers); each probe's verdict is then a
test of its own, so a hole shows by name. A cheat that scores 1 through a known hole of the
verifier (owned elsewhere, not fixed here) is marked xfail with the hole named in HOLES.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from cligym.layout import ExportDir
from cligym.models.io import load
from cligym.models.validate import ProbeResult, ValidationReport
from cligym.validate.probes import battery

PROBES = battery()
#: cheat -> the verifier hole that lets it score (xfail, not fixed here: the verifier is
#: another change's). Empty: the battery finds none since the verifier guard (before it,
#: stdout_symlink scored 1: the runner's redirection into /logs/verifier/test-stdout.txt
#: followed the link, truncated /tests/test.sh, and the planted reward.json was read).
HOLES: dict[str, str] = {}


@pytest.fixture(scope="module")
def probed(markupsafe_harbor, tmp_path_factory) -> tuple[ValidationReport, dict[str, ProbeResult], str]:
    """The report of ``validate --probes --json`` on one task, its probes by name, stderr."""
    folder = tmp_path_factory.mktemp("probes")
    task = ExportDir(markupsafe_harbor).task_dirs()[0]
    shutil.copytree(task.path, folder / "tasks" / task.name)
    proc = subprocess.run([sys.executable, "-m", "cligym", "validate", str(folder / "tasks"), "--probes", "--json"],
                          capture_output=True, text=True, timeout=3600, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr
    report = load(ValidationReport, ExportDir(folder / "tasks").validation)
    rows = json.loads(proc.stdout)
    assert len(rows) == 1 and rows[0]["task"] == task.name
    assert proc.returncode == (0 if report.all_ok else 1), proc.stderr
    result = report.results[0]
    assert result.oracle.reward == 1 and result.nop.reward == 0, result
    assert result.probes is not None and result.digest and result.probe_seconds
    print(f"\nprobes of {task.name}: {result.probe_seconds:.1f} s (task {result.seconds:.1f} s)")
    for probe in result.probes:
        print(f"  {probe.probe:22} {probe.kind:6} reward {probe.reward} {probe.seconds:6.1f} s  {probe.verdict}")
    return report, {p.probe: p for p in result.probes}, proc.stderr


def test_every_probe_ran_and_the_cost_is_measured(probed):
    report, found, stderr = probed
    assert sorted(found) == sorted(p.name for p in PROBES)
    assert (report.probe_seconds_per_task
            and report.probe_seconds_per_task >= sum(p.seconds for p in found.values()) * 0.9)
    for probe in found.values():
        if not probe.ok:  # a failed probe is listed with its verdict line
            assert probe.line() in stderr


@pytest.mark.parametrize("name", [p.name for p in PROBES if p.kind == "honest"])
def test_an_honest_repair_after_the_oracle_scores_one(probed, name):
    probe = probed[1][name]
    assert not probe.skipped, probe  # a gold image has a venv and a wheelhouse
    assert probe.reward == 1.0, probe
    assert probe.verdict.startswith("cligym verifier: reward 1: "), probe


@pytest.mark.parametrize("name", [p.name for p in PROBES if p.kind == "cheat"])
def test_a_cheat_with_nothing_repaired_scores_zero(probed, name):
    probe = probed[1][name]
    if name in HOLES and probe.reward != 0.0:
        pytest.xfail(HOLES[name])
    assert probe.reward == 0.0, probe
    assert probe.verdict.startswith("cligym verifier: reward 0: "), probe
