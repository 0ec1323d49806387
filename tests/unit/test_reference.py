"""The pieces around the gold reference that need no container: export refuses to write
over records, the exporter's busybox check, and the default operator set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cligym.errors import BadInput
from cligym.export.stage import export
from cligym.harness import bundle
from cligym.invert.operators import REGISTRY, get
from cligym.layout import ReferenceDir, TaskDir
from cligym.models.reference import GoldReference, JunitKey

#: A task record written by an earlier cligym (it loads unchanged).
RECORD = Path(__file__).parents[1] / "data" / "records-0.1.0" / "instance.json"


def make_run(path: Path) -> Path:
    """A run directory with one task record (what export refuses to lose)."""
    (path / "candidates").mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "tasks" / "t1").mkdir(parents=True)
    (path / "tasks" / "t1" / "instance.json").write_bytes(RECORD.read_bytes())
    return path


@pytest.mark.parametrize("where", ["run", "parent", "inside", "gold", "holds_gold", "rollout"])
def test_export_refuses_an_output_that_would_take_records_with_it(tmp_path, where):
    run = make_run(tmp_path / "runs" / "run")
    gold = tmp_path / "g"
    gold.mkdir()
    (gold / "gold.json").write_text("{}")
    rollout = tmp_path / "r"
    (rollout / "task" / "000").mkdir(parents=True)
    (rollout / "task" / "000" / "result.json").write_text("{}")
    (rollout / "summary.json").write_text("{}")
    out = {"run": run, "parent": tmp_path / "runs", "inside": run / "tasks", "gold": gold / "out",
           "holds_gold": tmp_path, "rollout": rollout}[where]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(BadInput, match="refusing to export into"):
        export(run, "harbor", out, force=True)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_missing_or_dynamic_busybox_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(bundle, "BUSYBOX_PATHS", (tmp_path / "newer", tmp_path / "busybox"))
    with pytest.raises(bundle.NoBusybox, match="busybox-static"):
        bundle.busybox_bytes()
    (tmp_path / "busybox").write_bytes(b"\x7fELF" + b"\0" * 100 + b"/lib64/ld-linux-x86-64.so.2")
    with pytest.raises(bundle.NoBusybox, match="not a static busybox"):
        bundle.busybox_bytes()
    (tmp_path / "newer").write_bytes(b"\x7fELF static")  # the first that exists is shipped
    assert bundle.host_busybox() == tmp_path / "newer" and bundle.busybox_bytes() == b"\x7fELF static"


def test_the_default_operator_set_leaves_out_what_the_verifier_undoes():
    left_out = {op.name for op in REGISTRY.values() if not op.default}
    assert {op.name for op in REGISTRY.values() if op.category == "test_configuration"} <= left_out
    assert {op.name for op in get()} == set(REGISTRY) - left_out
    assert [op.name for op in get(["conftest_autouse_chdir"])] == ["conftest_autouse_chdir"]  # named, it runs


def test_the_verifier_reads_its_reference_by_the_paths_task_env_gives(tmp_path):
    """layout's ReferenceDir names every file of the bundle: task.env gives verifier.sh the
    path of each (below $T, its tests/ folder), and the shell spells none of their names."""
    reference = GoldReference(
        instance_id="t", workdir="/testbed", test_command="python -m pytest", interpreter="/usr/bin/python3",
        command_path="/usr/bin/python", rootdir="/testbed", fail_to_pass=["t.py::a"], pass_to_pass=[],
        order=["t.py::a"], keys=[JunitKey(node="t.py::a", classname="t", name="a")], pristine=["/testbed/t.py"],
        foreign=[], conftests=[], shadow_dirs={"/testbed": ["t.py"], "/x": []}, protected_modules=["os"],
        spec=["F /x"], fingerprint=["file /x 00"])
    task = TaskDir(tmp_path / "task")
    bundle.write_reference(reference, b"", task)
    paths = dict(line.split('="$T"/', 1) for line in task.reference.env.read_text().splitlines() if '="$T"/' in line)
    assert set(paths) == {"R_BUSYBOX", *ReferenceDir.SHELL}
    for variable, path in paths.items():
        found = [task.tests / path.replace("@", n) for n in ("1", "2")] if "@" in path else [task.tests / path]
        assert all(p.is_file() for p in found), variable
    verifier = task.reference.verifier.read_text()
    assert f'. "${{0%/*}}/{task.reference.env.name}"' in verifier
    code = "\n".join(line for line in verifier.splitlines() if not line.lstrip().startswith("#"))
    names = "|".join(re.escape(name.split("@")[0]) for name in ReferenceDir.SHELL.values())
    spelled = [m for m in re.findall(rf"\S*(?:{names})", code) if not m.lstrip('"').startswith("$LOGS/")]
    assert spelled == []


def test_gold_rootdir_is_collected_once_per_set_of_test_folders(monkeypatch):
    from cligym.harness import reference

    calls: list[list[str]] = []
    monkeypatch.setattr(reference, "_KEPT", {})
    monkeypatch.setattr(reference, "_collect_rootdir",
                        lambda session, workdir, command, ids: calls.append(ids) or (f"/w{len(calls)}", None))

    def rootdir(ids: list[str], image: str = "gold:1", command: str = "pytest") -> tuple[str, str | None]:
        return reference._rootdir(None, image, "/w", command, ids)  # type: ignore[arg-type]

    first = rootdir(["tests/test_a.py::t[x::y]", "tests/test_b.py::C::t"])
    assert rootdir(["tests/test_c.py::t", "tests/test_a.py::u"]) == first  # the same folder: no collection
    assert rootdir(["tests/sub/test_a.py::t", "tests/test_a.py::t"]) != first  # another folder among them
    assert rootdir(["tests/test_a.py::t"], image="gold:2") != first  # another image
    assert rootdir(["tests/test_a.py::t"], command="pytest -c other.ini") != first  # another command
    assert len(calls) == 4
