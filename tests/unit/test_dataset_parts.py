"""The parts of a dataset build that need no engine: the project list, the ledger, Harbor's
manifest digests (checked by Harbor's own code), the worker pool's processes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cligym.dataset.ledger import Ledger
from cligym.dataset.manifest import task_digest, write_manifest
from cligym.dataset.plan import make_plan, project_key
from cligym.dataset.pools import LocalPool
from cligym.errors import BadInput
from cligym.layout import DatasetDir, ExportDir
from cligym.models.dataset import ProjectEntry

ROOT = Path(__file__).resolve().parents[2]


HARBOR_PY = ROOT / ".venv-harbor" / "bin" / "python"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _fake_task(root: Path, name: str, body: str) -> None:
    task = root / name
    _write(task / "task.toml", f'version = "1.0"\n[task]\nname = "cligym/{name}"\n')
    _write(task / "instruction.md", f"fix {name}\n")
    _write(task / "environment" / "Dockerfile", "FROM scratch\n")
    _write(task / "tests" / "test.sh", body)
    _write(task / "tests" / "reference" / "data.json", "{}\n")
    _write(task / "solution" / "solve.sh", "true\n")
    _write(task / "tests" / "__pycache__" / "x.cpython-311.pyc", "ignored")


def _pool_command(tmp_path: Path, behaviour: str) -> list[str]:
    """A stand-in worker: writes an outcome (or sleeps, or fails) as the CLI's unit verb would."""
    script = _write(tmp_path / "worker.py", f"""
        import sys, time
        from pathlib import Path
        from cligym.dataset.pools import write_outcome
        from cligym.layout import DatasetDir
        from cligym.models.dataset import UnitOutcome
        out, key = sys.argv[1], sys.argv[2]
        Path(out, "pids").mkdir(exist_ok=True)
        name = key.replace("/", "_")  # the pid file appears whole: the test reads it at once
        Path(out, f".{{name}}.pid").write_text(str(__import__("os").getpid()))
        Path(out, f".{{name}}.pid").rename(Path(out, "pids", name))
        behaviour = {behaviour!r}
        if behaviour == "sleep":
            time.sleep(600)
        if behaviour == "crash":
            print("something broke"); sys.exit(1)
        write_outcome(DatasetDir(Path(out)), key, UnitOutcome(ok=True, detail="did " + key))
        """)
    return [sys.executable, str(script)]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cligym", "dataset", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_project_keys_and_seeds_do_not_depend_on_the_other_projects(tmp_path):
    (tmp_path / "localproj").mkdir()
    one = _write(tmp_path / "a.toml", """
        attempts = 7
        [[project]]
        source = "markupsafe==3.0.2"
        tasks = 3
        [[project]]
        source = "localproj"
        """)
    two = _write(tmp_path / "b.toml", """
        [[project]]
        source = "localproj"
        [[project]]
        source = "h11==0.16.0"
        [[project]]
        source = "markupsafe==3.0.2"
        """)
    a, b = make_plan(one, 5), make_plan(two, 5)
    assert [p.key for p in a.projects] == ["markupsafe-3.0.2", "localproj"]
    assert a.projects[0].attempts == 7 and a.projects[0].tasks == 3 and a.projects[1].tasks == 10
    assert a.projects[1].source == str((tmp_path / "localproj").resolve())
    seeds_a = {p.key: p.seed for p in a.projects}
    seeds_b = {p.key: p.seed for p in b.projects}
    assert seeds_a["markupsafe-3.0.2"] == seeds_b["markupsafe-3.0.2"]
    assert seeds_a["localproj"] == seeds_b["localproj"]
    assert make_plan(one, 6).projects[0].seed != seeds_a["markupsafe-3.0.2"]
    assert project_key(ProjectEntry(image="reg/x:1", test_cmd="pytest")) == "reg-x-1"


@pytest.mark.parametrize("text, message", [
    ("[[project]]\nsource = 'a==1'\n[[project]]\nsource = 'a==1'\n", "two projects are named 'a-1'"),
    ("[[project]]\nimage = 'x'\n", "an image needs a test_cmd"),
    ("[[project]]\nattempts = 3\n", "has neither a source nor an image"),
    ("[[project]]\nsource = 'a==1'\nprofile = 'nope.toml'\n", "the profile nope.toml does not exist"),
    ("[[project]]\nsource = 'a==1'\nflavour = 1\n", "project.0.flavour: Extra inputs are not permitted"),
    ("attempts = 0\n[[project]]\nsource = 'a==1'\n", "attempts: Input should be greater than or equal to 1"),
    ("attempts = 3\n", "lists no project"),
    ("[[project]\n", "project list .*p.toml: not valid TOML"),
])
def test_a_bad_project_list_is_one_clear_line(tmp_path, text, message):
    path = _write(tmp_path / "p.toml", text)
    with pytest.raises(BadInput, match=message):
        make_plan(path, 0)


def test_the_cli_refuses_a_bad_project_list_with_exit_2(tmp_path):
    path = _write(tmp_path / "p.toml", "[[project]]\nattempts = 3\n")
    done = _cli("build", str(path), "-o", str(tmp_path / "o"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"cligym: error: {path}: project 1 has neither a source nor an image"]
    assert not (tmp_path / "o").exists()


def test_the_ledger_keeps_every_change_and_a_dead_heads_units_run_again(tmp_path):
    path = tmp_path / "ledger.sqlite"
    ledger = Ledger(path)
    ledger.add("gold/p", "p")
    ledger.add("invert/p", "p")
    ledger.start("gold/p")
    ledger.finish("gold/p", ok=True, detail="12 tests", node="n1", seconds=3.5)
    ledger.start("invert/p")
    ledger.add("gold/p", "p")  # known already: unchanged
    reader = Ledger(path, readonly=True)  # another process, while the writer is open
    assert {r["key"]: r["state"] for r in reader.rows()} == {"gold/p": "done", "invert/p": "running"}
    assert reader.rows("gold")[0]["node"] == "n1"
    with pytest.raises(sqlite3.OperationalError):
        reader.add("x/y", "y")  # read-only
    reader.close()
    ledger.close()  # the head dies here, invert/p still running
    again = Ledger(path)
    assert again.reset_running() == 1
    assert again.state("invert/p") == "pending" and again.state("gold/p") == "done"
    assert [(r["kind"], r["state"]) for r in again.rows(project="p")] == [("gold", "done"), ("invert", "pending")]
    again.close()
    with pytest.raises(BadInput, match="does not exist"):
        Ledger(tmp_path / "none.sqlite", readonly=True)


@pytest.mark.skipif(not HARBOR_PY.exists(), reason="Harbor's models are not installed (scripts/setup.sh)")
def test_manifest_digests_are_the_ones_harbor_computes(tmp_path):
    harbor = ExportDir(tmp_path / "harbor")
    _fake_task(harbor.path, "t-b", "exit 0\n")
    _fake_task(harbor.path, "t-a", "exit 1\n")
    manifest = write_manifest(harbor, ["t-b", "t-a"], harbor.path / "dataset.toml")
    check = textwrap.dedent(f"""
        import typing
        if not hasattr(typing, "override"):  # Harbor declares Python 3.12; 3.11 lacks only this no-op decorator
            typing.override = lambda f: f
        from pathlib import Path
        from harbor.models.dataset.manifest import DatasetManifest
        from harbor.publisher.packager import Packager
        root = Path({str(harbor.path)!r})
        manifest = DatasetManifest.from_toml_file(root / "dataset.toml")
        for ref in manifest.tasks:
            digest, files = Packager.compute_content_hash(root / ref.short_name)
            print(ref.name, ref.digest == "sha256:" + digest, len(files))
        print(manifest.dataset.name)
        """)
    done = subprocess.run([str(HARBOR_PY), "-c", check], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["cligym/t-a True 6", "cligym/t-b True 6"]  # sorted; the .pyc left out
    assert lines[2] == f"cligym/{tmp_path.name}"
    before = task_digest(harbor.task("t-a"))
    (harbor.path / "t-a" / "tests" / "test.sh").write_text("exit 2\n")
    assert task_digest(harbor.task("t-a")) != before
    assert manifest.read_text().count("[[tasks]]") == 2


def test_the_local_pool_runs_units_in_worker_processes_and_reports_crashes(tmp_path):
    dataset = DatasetDir(tmp_path / "ds")
    pool = LocalPool(dataset, 2, _pool_command(tmp_path, "ok"))
    pool.submit("gold/a", None, None)
    pool.submit("gold/b", 123.0, None)
    finished = []
    deadline = time.monotonic() + 60
    while pool.running() and time.monotonic() < deadline:
        finished += pool.wait(1.0)
    assert sorted((k, o.ok, o.detail) for k, o, _ in finished) == [("gold/a", True, "did gold/a"),
                                                                   ("gold/b", True, "did gold/b")]
    crashing = LocalPool(dataset, 1, _pool_command(tmp_path, "crash"))
    crashing.submit("gold/c", None, None)
    (key, outcome, _), = crashing.wait(60)
    assert not outcome.ok and outcome.detail == "the worker exited 1: something broke"


def test_workers_die_with_a_head_killed_by_sigkill(tmp_path):
    """A head killed with -9 leaves no worker running on (the kernel kills them)."""
    dataset = tmp_path / "ds"
    head = _write(tmp_path / "head.py", f"""
        import sys, time
        from pathlib import Path
        from cligym.dataset.pools import LocalPool
        from cligym.layout import DatasetDir
        pool = LocalPool(DatasetDir(Path({str(dataset)!r})), 2, {_pool_command(tmp_path, "sleep")!r})
        pool.submit("invert/a", None, None)
        pool.submit("invert/b", None, None)
        time.sleep(600)
        """)
    proc = subprocess.Popen([sys.executable, str(head)])
    pids_dir = dataset / "pids"
    deadline = time.monotonic() + 60
    while (not pids_dir.is_dir() or len(list(pids_dir.iterdir())) < 2) and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = [int(p.read_text()) for p in pids_dir.iterdir()]
    assert len(workers) == 2 and all(_alive(pid) for pid in workers)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in workers)


@pytest.mark.parametrize("args, message", [
    (["status", "{tmp}"], "plan.json does not exist (expected a dataset plan record)"),
    (["build", "{tmp}/p.toml", "-o", "{tmp}/o", "--max-disk", "lots"], "--max-disk 'lots' is no size"),
    (["build", "{tmp}/p.toml", "-o", "{tmp}/o", "--workers", "0"], "--workers must be at least 1"),
    (["build", "{tmp}/p.toml", "-o", "{tmp}/p.toml"], "it exists and is not a directory"),
])
def test_bad_dataset_input_is_one_line_and_exit_2(tmp_path, args, message):
    _write(tmp_path / "p.toml", "[[project]]\nsource = 'markupsafe==3.0.2'\n")
    done = _cli(*(a.format(tmp=tmp_path) for a in args))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], lines


def test_retrying_failed_units_reruns_the_export_of_a_failed_validation(tmp_path):
    ledger = Ledger(tmp_path / "ledger.sqlite")
    for key in ("gold/p", "invert/p", "export/p", "validate/t1", "validate/t2", "gold/q"):
        ledger.add(key, key.split("/")[1] if not key.startswith("validate") else "p")
        ledger.start(key)
    for key, ok in (("gold/p", True), ("invert/p", True), ("export/p", True), ("validate/t1", True),
                    ("validate/t2", False), ("gold/q", False)):
        ledger.finish(key, ok=ok)
    ledger.record("attempt/p/0000", "p", "skipped", "no_failure: nothing broke")
    assert ledger.reset_failed() == 2
    states = {r["key"]: r["state"] for r in ledger.rows()}
    assert states == {"gold/p": "done", "invert/p": "done", "export/p": "pending", "validate/t1": "done",
                      "validate/t2": "pending", "gold/q": "pending", "attempt/p/0000": "skipped"}
    ledger.close()


def test_a_unit_whose_worker_finished_after_its_head_died_is_not_run_again(tmp_path):
    from types import SimpleNamespace

    from cligym.dataset.pools import write_outcome
    from cligym.dataset.stage import Budgets, _Head
    from cligym.models.dataset import DatasetPlan, UnitOutcome
    from cligym.ui import Reporter

    dataset = DatasetDir(tmp_path / "ds")
    dataset.path.mkdir()
    ledger = Ledger(dataset.ledger)
    for key in ("export/p", "invert/q"):
        ledger.add(key, key.split("/")[1])
        ledger.start(key)
    write_outcome(dataset, "export/p", UnitOutcome(ok=True, detail="2 tasks", tasks=["t1", "t2"]))
    head = _Head(dataset, DatasetPlan(seed=0, projects=[]), ledger, LocalPool(dataset, 1, ["true"]), Budgets(),
                 Reporter())
    head.recover()
    states = {r["key"]: (r["state"], r["detail"]) for r in ledger.rows()}
    assert states == {"export/p": ("done", "2 tasks"), "invert/q": ("pending", ""),
                      "validate/t1": ("pending", ""), "validate/t2": ("pending", "")}

    # an earlier run's outcome is not this run's: the head clears it before it starts the unit
    write_outcome(dataset, "validate/t1", UnitOutcome(ok=False, detail="an earlier run"))
    submitted = []
    head.pool = SimpleNamespace(slots=1, running=lambda: set(submitted),
                                submit=lambda key, deadline, node: submitted.append(key))
    head.fill()
    assert submitted == ["validate/t1"]
    head.recover()  # the head died with the worker still at work
    row = next(r for r in ledger.rows() if r["key"] == "validate/t1")
    assert (row["state"], row["runs"]) == ("pending", 1)
    ledger.close()


def test_an_inversion_the_deadline_stopped_stays_pending_and_goes_on_next_time(tmp_path, monkeypatch):
    """A build's --max-hours stop cuts a project's inversion short: its unit stays pending
    with its seconds kept (the next build makes the attempts left), and a project whose
    attempts are all made, or that ran out of new states, is done."""
    from types import SimpleNamespace

    import cligym.invert
    from cligym.dataset import units
    from cligym.dataset.stage import Budgets, _Head
    from cligym.models.dataset import DatasetPlan
    from cligym.ui import Reporter

    made = {"attempts": 3, "exhausted": False}
    monkeypatch.setattr(units, "_needs_gold", lambda dataset, project, runtime: None)
    monkeypatch.setattr(cligym.invert, "invert", lambda *a, **k: SimpleNamespace(verified=2, discard_reasons={},
                                                                                **made))
    dataset = DatasetDir(tmp_path / "ds")
    dataset.path.mkdir()
    project = SimpleNamespace(key="p", attempts=10, seed=0, tasks=None)
    past = time.time() - 1
    cut = units._invert(dataset, project, None, past)
    assert cut.unfinished and cut.detail == "2 tasks of 3 attempts so far: stopped at the build's deadline"
    assert not units._invert(dataset, project, None, None).unfinished  # no deadline: the run ended on its own
    made["exhausted"] = True
    assert not units._invert(dataset, project, None, past).unfinished

    ledger = Ledger(dataset.ledger)
    ledger.add("invert/p", "p")
    ledger.start("invert/p")
    head = _Head(dataset, DatasetPlan(seed=0, projects=[]), ledger, LocalPool(dataset, 1, ["true"]), Budgets(),
                 Reporter())
    head.record("invert/p", cut, 40.0)
    row = ledger.rows()[0]
    assert (row["state"], row["seconds"], row["detail"]) == ("pending", 40.0, cut.detail)
    ledger.close()
