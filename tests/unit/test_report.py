"""``cligym report`` on a small hand-made set of records (two projects, a Harbor export,
its validation, rollouts and a curation) whose every expected figure is worked out by hand
below; the page is opened in a real headless browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cligym.layout import CurateDir, ExportDir, GoldDir, RolloutDir, RunDir
from cligym.models.curate import CurationSummary
from cligym.models.export import ExportReport
from cligym.models.gold import GoldEnv, Source
from cligym.models.io import save
from cligym.models.issue import IssueText, TaskIssues
from cligym.models.rollout import RolloutResult, RolloutSummary
from cligym.models.run import InvertConfig
from cligym.models.task import AppliedChange, Candidate, Difficulty, Task
from cligym.models.validate import ModeResult, TaskValidation, ValidationReport
from cligym.report import ReportDir, make_report


def _gold(folder: Path, name: str, version: str, image_id: str, tests: int, size: int) -> None:
    save(GoldEnv(source=Source(kind="pypi", spec=f"{name}=={version}", name=name, version=version),
                 image=f"cligym/gold-{name}:{version}", image_id=image_id, python="/opt/venv/bin/python",
                 python_version="3.11.2", workdir="/testbed", test_command="python -m pytest", runs=3,
                 tests=[f"tests/test_x.py::test_{i}" for i in range(tests)], image_bytes=size), GoldDir(folder).gold)


def _measure(k: int, depth: int, named: bool, sweeper: bool, breadth: int, subsystems: int) -> Difficulty:
    return Difficulty(k=k, reveal_depth=depth, culprit_named=named, sweeper_solves=sweeper, breadth=breadth,
                      subsystems=subsystems, label=Difficulty.grade(k, depth, named, sweeper, breadth))


def _task(instance_id: str, repo: str, image_id: str, category: str, operators: list[str], f2p: int, p2p: int,
          lines: int, ff: float, extra: int | None, difficulty: Difficulty | None = None) -> Task:
    return Task(difficulty=difficulty,
        instance_id=instance_id, repo=repo, image_name="img", gold_image_id=image_id, workdir="/testbed",
        test_command="python -m pytest", dockerfile=[f"RUN true # {i}" for i in range(lines)],
        applied=[AppliedChange(name=op, category=category, target="", symptom="", hint="") for op in operators],
        FAIL_TO_PASS=[f"t::f{i}" for i in range(f2p)], PASS_TO_PASS=[f"t::p{i}" for i in range(p2p)],
        selected_tests=[f"t::{k}{i}" for k, n in (("f", f2p), ("p", p2p)) for i in range(n)],
        solution="#!/bin/sh\n", fail_fraction=ff, suite_size=10, extra_bytes=extra, seed=0, attempt=0)


def _run(folder: Path, image_id: str, candidates: list[dict], tasks: list[Task]) -> RunDir:
    run = RunDir(folder)
    save(InvertConfig(gold_image_id=image_id, seed=0, operators=[], sample_size=200, max_operators=3), run.config)
    for n, fields in enumerate(candidates):
        save(Candidate(id=f"{n:04d}", attempt=n, seed=0, **fields), run.candidate(n))
    for task in tasks:
        save(task, run.task_record(task.instance_id))
    return run


def _harbor_task(export: ExportDir, name: str, project: str, category: str, difficulty: str, text: str) -> None:
    task = export.task(name)
    task.environment.mkdir(parents=True)
    task.task_toml.write_text(f'version = "1.0"\n[metadata]\nsource_project = "{project}"\n'
                              f'category = "{category}"\ndifficulty = "{difficulty}"\n')
    task.instruction.write_text(text)
    task.dockerfile.write_text("FROM img\n")


def _rollout(folder: Path, tasks_dir: Path, outcomes: dict[str, list[tuple[float, int, str]]]) -> None:
    out = RolloutDir(folder)
    for task, attempts in outcomes.items():
        for n, (reward, steps, stop) in enumerate(attempts):
            save(RolloutResult(task_id=task, attempt=n, agent="llm", reward=reward, steps=steps, stop_reason=stop),
                 out.result(task, n))
    save(RolloutSummary(agent="llm", k=2, tasks=2, attempts=4, successes=1, pass_at_1=0.25, pass_at_k=0.5,
                        tasks_dir=str(tasks_dir.resolve())), out.summary)


@pytest.fixture
def records(tmp_path) -> dict[str, Path]:
    """Project alpha: gold of 10 tests (a 6000-byte image), 4 attempts (2 tasks, both with a
    measured difficulty: a1 easy, a2 hard); beta: 5 tests (3000 bytes), 2 attempts (1 task,
    an older record without a measure). alpha.a1 and beta.b1 exported with hints, validated (b1's oracle failed), rolled
    out twice each (a1: one success), and the rollouts curated (1 kept, 1 loop among 3 failures)."""
    paths = {name: tmp_path / name for name in ("gold-a", "gold-b", "run-a", "run-b", "tasks", "roll", "cur")}
    _gold(paths["gold-a"], "alpha", "1.0", "sha256:aaa", 10, 6000)
    _gold(paths["gold-b"], "beta", "2.0", "sha256:bbb", 5, 3000)
    a1 = _task("alpha.a1", "alpha==1.0", "sha256:aaa", "dynamic_linking", ["lib_symlink_dangling"], 2, 3, 1, .4, 1000,
               _measure(k=1, depth=1, named=True, sweeper=False, breadth=1, subsystems=1))
    a2 = _task("alpha.a2", "alpha==1.0", "sha256:aaa", "import_system", ["cwd_shadow_module", "init_py_removed"],
               4, 1, 3, .8, 3000, _measure(k=2, depth=3, named=False, sweeper=False, breadth=3, subsystems=2))
    b1 = _task("beta.b1", "beta==2.0", "sha256:bbb", "import_system", ["cwd_shadow_module"], 6, 0, 2, 1.0, None)
    run_a = _run(paths["run-a"], "sha256:aaa", [
        {"status": "verified", "seconds": {"build": 2, "run": 4}, "prompt_tokens": 100, "completion_tokens": 20},
        {"status": "verified", "seconds": {"run": 3}},
        {"status": "discarded", "discard_kind": "no_failure", "seconds": {"run": 1}},
        {"status": "discarded", "discard_kind": "not_solvable", "seconds": {"run": 2}},
    ], [a1, a2])
    _run(paths["run-b"], "sha256:bbb", [
        {"status": "verified", "seconds": {"run": 10}},
        {"status": "discarded", "discard_kind": "no_failure", "seconds": {"run": 5}},
    ], [b1])
    save(TaskIssues(instance_id="alpha.a1", texts={
        "strong": IssueText(style="strong", with_hint="one two three four five", without_hint="one two three"),
        "weak": IssueText(style="weak", with_hint="a b c d", without_hint="a b")}), run_a.issues("alpha.a1"))
    export = ExportDir(paths["tasks"])
    _harbor_task(export, "alpha.a1", "alpha==1.0", "dynamic_linking", "easy", "Fix the broken library please now")
    _harbor_task(export, "beta.b1", "beta==2.0", "import_system", "hard", "Repair the import path")
    save(ExportReport(format="harbor", hint=True, style="strong", tasks=["alpha.a1", "beta.b1"],
                      output=str(paths["tasks"])), export.report)
    results = [TaskValidation(task="alpha.a1", format="harbor", oracle=ModeResult(reward=1), nop=ModeResult(reward=0),
                              seconds=1), TaskValidation(task="beta.b1", format="harbor", oracle=ModeResult(reward=0),
                                                         nop=ModeResult(reward=0), seconds=1)]
    save(ValidationReport.of(str(paths["tasks"]), results), export.validation)
    _rollout(paths["roll"], paths["tasks"], {"alpha.a1": [(1.0, 10, "finished"), (0.0, 20, "max_steps")],
                                             "beta.b1": [(0.0, 5, "max_steps"), (0.0, 7, "finished")]})
    CurateDir(paths["cur"]).path.mkdir()
    CurateDir(paths["cur"]).sft.write_text("")
    save(CurationSummary(rollout_dir="r", out_dir="c", min_steps=20, loop_repeat=3, trajectories=4, successful=1,
                         failed=3, kept=1, dropped={"not_successful": 3}, cheating={}, cheating_detected={},
                         loops_failures=1, loops_all=1, loop_rate_failures=1 / 3, loop_rate_all=.25),
         CurateDir(paths["cur"]).summary)
    return paths


def test_figures_match_the_hand_computed_ones(records, tmp_path):
    report = make_report(list(records.values()), tmp_path / "out")
    table = {row.metric: row.ours for row in report.table}
    assert table["instances"] == 3 and table["images"] == 2
    assert table["FAIL_TO_PASS"] == 4.0  # (2 + 4 + 6) / 3
    assert table["PASS_TO_PASS"] == pytest.approx(4 / 3, abs=1e-4)  # (3 + 1 + 0) / 3
    assert table["Dockerfile lines"] == 3.0  # FROM + (1, 3, 2) lines
    assert table["issue words"] == 5.0  # the two exported instructions: 6 and 4 words
    assert table["LLM tokens per task"] == 40.0  # (100 + 20) / 3
    # the gold images shared by 3 tasks, plus the mean of the task layers known (1000, 3000)
    assert table["storage bytes per task"] == (6000 + 3000) / 3 + 2000
    alpha, beta = report.projects
    assert (alpha.project, alpha.tests, alpha.attempts, alpha.tasks, alpha.yield_) == ("alpha==1.0", 10, 4, 2, .5)
    assert (alpha.mean_f2p, alpha.mean_p2p, alpha.seconds_per_task, alpha.bytes_per_task) == (3.0, 2.0, 6.0, 2000.0)
    assert (beta.tests, beta.attempts, beta.tasks, beta.seconds_per_task, beta.bytes_per_task) == (5, 2, 1, 15.0, None)
    # every attempt's phases (the discarded ones' too) over the 3 tasks: build 2, run 4+3+1+2+10+5
    assert report.phase_seconds_per_task.spent() == {"build": 0.67, "run": 8.33}
    assert report.categories == {"import_system": 2, "dynamic_linking": 1}
    assert report.operators == {"cwd_shadow_module": 2, "lib_symlink_dangling": 1, "init_py_removed": 1}
    assert sorted(report.f2p_counts) == [2, 4, 6] and sorted(report.dockerfile_lines) == [2, 3, 4]
    assert report.issue_words == {"strong hint": [5], "strong no hint": [3], "weak hint": [4], "weak no hint": [2]}
    assert report.discard_reasons == {"no_failure": 2, "not_solvable": 1}
    assert report.funnel == {"attempts": 6, "verified": 3, "exported": 2, "validated": 1, "rollouts": 4,
                             "successful": 1, "kept": 1}


def test_rollout_figures_match_the_hand_computed_ones(records, tmp_path):
    rollouts = make_report(list(records.values()), tmp_path / "out").rollouts
    assert rollouts is not None
    # a1: 1 of 2 attempts; b1: 0 of 2. pass@1 = (1/2 + 0) / 2, pass@k = (1 + 0) / 2
    assert (rollouts.overall.pass_at_1, rollouts.overall.pass_at_k, rollouts.overall.tasks) == (.25, .5, 2)
    assert rollouts.per_category["dynamic_linking"].pass_at_1 == .5
    assert rollouts.per_category["import_system"].pass_at_k == 0.0
    assert rollouts.per_difficulty["easy"].pass_at_k == 1.0 and rollouts.per_difficulty["hard"].pass_at_1 == 0.0
    assert set(rollouts.by_hint) == {"hint"} and rollouts.by_hint["hint"].pass_at_1 == .25
    assert sorted(rollouts.steps) == [5, 7, 10, 20]
    assert rollouts.stop_reasons == {"finished": 2, "max_steps": 2}
    assert rollouts.loop_rate_failures == pytest.approx(1 / 3, abs=1e-4)


def test_task_rows_link_to_the_exported_files(records, tmp_path):
    out = tmp_path / "out"
    rows = {row.instance_id: row for row in make_report(list(records.values()), out).tasks}
    assert set(rows) == {"alpha.a1", "alpha.a2", "beta.b1"}
    assert (out / rows["alpha.a1"].instruction).read_text() == "Fix the broken library please now"
    assert (out / rows["beta.b1"].dockerfile).read_text() == "FROM img\n"
    assert rows["alpha.a2"].instruction == "" and rows["beta.b1"].difficulty == "hard"  # b1: the export's label
    # measured tasks show the measure's label, exported or not
    assert (rows["alpha.a1"].difficulty, rows["alpha.a2"].difficulty) == ("easy", "hard")


def test_difficulty_distributions_match_the_hand_computed_ones(records, tmp_path):
    d = make_report(list(records.values()), tmp_path / "out").difficulty
    assert (d.measured, d.unmeasured) == (2, 1)  # b1 is an older record
    assert list(d.labels.items()) == [("easy", 1), ("medium", 0), ("hard", 1)]
    assert d.k == {1: 1, 2: 1} and d.reveal_depth == {1: 1, 3: 1}
    assert d.breadth == {1: 1, 3: 1} and d.subsystems == {1: 1, 2: 1}
    assert (d.sweeper_solves, d.culprit_named) == (0.0, 0.5)  # a1 names its culprit; neither is swept
    assert (d.dockerfile_lines, d.paper_dockerfile_lines) == (3.0, 6.8)


def test_no_measure_draws_no_difficulty_chart(records, tmp_path):
    out = tmp_path / "out"
    d = make_report([records["gold-b"], records["run-b"]], out).difficulty
    assert (d.measured, d.unmeasured, d.sweeper_solves, d.culprit_named) == (1 - 1, 1, None, None)
    assert d.labels == {"easy": 0, "medium": 0, "hard": 0} and d.k == {} and d.dockerfile_lines == 3.0
    page = ReportDir(out).html.read_text()
    assert 'id="plot-dockerfile"' in page and 'id="plot-difficulty_labels"' not in page
    assert "No task carries a measured difficulty" in page


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cligym", "report", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_json_is_report_json(records, tmp_path):
    out = tmp_path / "out"
    done = _cli(*map(str, records.values()), "-o", str(out), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(ReportDir(out).json.read_text())
    difficulty = json.loads(done.stdout)["difficulty"]
    assert difficulty["labels"] == {"easy": 1, "medium": 0, "hard": 1} and difficulty["k"] == {"1": 1, "2": 1}
    assert difficulty["reveal_depth"] == {"1": 1, "3": 1} and difficulty["breadth"] == {"1": 1, "3": 1}
    assert (difficulty["sweeper_solves"], difficulty["culprit_named"]) == (0.0, 0.5)


@pytest.mark.parametrize("case", ["missing", "not-cligym", "no-paths"])
def test_bad_input_is_one_line_and_exit_2(case, tmp_path):
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("hello")
    args = {"missing": [str(tmp_path / "nope")], "not-cligym": [str(stray)], "no-paths": []}[case]
    done = _cli(*args, "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) <= 12 and "Traceback" not in done.stderr


CHROMIUM = shutil.which("chromium")


def _drawn_text(figure) -> set[str]:
    """The texts a chart draws: matplotlib draws glyphs as paths, each text preceded by a
    comment holding it."""
    return set(re.findall(r"<!-- (.*?) -->", figure.inner_html()))


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (scripts/setup.sh installs it)")
def test_the_page_renders_in_a_real_browser(records, tmp_path):
    from playwright.sync_api import sync_playwright

    out = tmp_path / "out"
    make_report(list(records.values()), out)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.goto(ReportDir(out).html.resolve().as_uri())
            plots = page.locator("figure.plot svg")
            # categories, operators, fail fractions, F2P, P2P, Dockerfile lines, issue words, funnel,
            # discards; difficulty labels, k, reveal depth, repair breadth, the sweeper's and culprit's
            # shares; where the time went; and for rollouts: per category, per difficulty, hint, steps,
            # stop reasons
            assert plots.count() == 20
            # the attempts' phases, in pipeline order, with what each took per verified task
            phases = _drawn_text(page.locator("#plot-phases"))
            assert {"build", "run"} <= phases and "seconds per verified task" in " ".join(phases)
            # the difficulty charts stand beside the Dockerfile-length one, whose paper mean is drawn
            beside = page.locator("div.charts", has=page.locator("#plot-dockerfile"))
            for name in ("difficulty_labels", "difficulty_k", "reveal_depth", "repair_breadth", "difficulty_shares"):
                assert beside.locator(f"#plot-{name} svg").count() == 1, name
            assert "paper's mean 6.8" in _drawn_text(beside.locator("#plot-dockerfile"))
            assert {"easy", "medium", "hard"} <= _drawn_text(beside.locator("#plot-difficulty_labels"))
            assert {"1", "2", "3"} <= _drawn_text(beside.locator("#plot-reveal_depth"))  # 2: an empty column
            assert {"sweeper solves", "0%", "culprit named", "50%"} <= _drawn_text(
                beside.locator("#plot-difficulty_shares"))
            table = page.locator("#difficulty").inner_text()
            assert "6.8" in table and "1 / 0 / 1" in table and "50.0%" in table, table
            for i in range(plots.count()):
                box = plots.nth(i).bounding_box()
                assert box and box["width"] > 100 and box["height"] > 50
                assert plots.nth(i).locator("path").count() > 5  # drawn, not an empty frame
            assert page.locator("#tasks tbody tr").count() == 3
            cells = page.locator("#tasks tbody tr td:nth-child(5)").all_inner_texts()
            assert cells == ["easy", "hard", "hard"]  # a1, a2 measured; b1 from its export
            assert page.locator("#projects tbody tr").count() == 2
            assert problems == []
        finally:
            browser.close()
