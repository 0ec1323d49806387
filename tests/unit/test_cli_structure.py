"""The command line's shape, with no engine needed: one module per verb, the verbs in their
order, choices and error lines from the registries, help texts, and the dependency rules
(no stage imports a sibling, nothing reaches into the engine's objects)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cligym.cli import app, main
from cligym.errors import BadInput
from cligym.export.registry import FORMATS, formats_help, get_exporter
from cligym.rollout.registry import AGENTS, agents_help, get_agent

SRC = Path(__file__).resolve().parents[2] / "src" / "cligym"
VERBS = ["gold", "operators", "invert", "verify", "export", "validate", "rollout", "curate", "clean", "demo",
         "version", "images"]
STAGES = ("gold", "invert", "verify", "issue", "export", "validate", "rollout", "curate")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cligym", *args], capture_output=True, text=True, timeout=120)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_verbs_are_listed_in_pipeline_order():
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    positions = [result.output.index(f"│ {verb} ") for verb in VERBS]
    assert positions == sorted(positions)


@pytest.mark.parametrize("verb", [v for v in VERBS if v != "images"] + ["images save", "images load"])
def test_every_verb_has_help(verb):
    result = CliRunner().invoke(app, [*verb.split(), "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "Usage:" in result.output


def test_help_texts_come_from_the_registries():
    runner = CliRunner()
    export_help = runner.invoke(app, ["export", "--help"], env={"COLUMNS": "200"}).output
    rollout_help = runner.invoke(app, ["rollout", "--help"], env={"COLUMNS": "200"}).output
    assert formats_help() == "harbor, tb (Terminal-Bench 1.0) or jsonl." and formats_help() in export_help
    assert agents_help() == "llm, oracle or nop." and agents_help() in rollout_help


def test_registries_name_their_choices_in_errors():
    assert list(FORMATS) == ["harbor", "tb", "jsonl"] and list(AGENTS) == ["llm", "oracle", "nop"]
    assert all(get_exporter(name).name == name for name in FORMATS)
    assert all(get_agent(name).name == name for name in AGENTS)
    with pytest.raises(BadInput, match=r"unknown format 'swe'; choose one of harbor, tb, jsonl"):
        get_exporter("swe")
    with pytest.raises(BadInput, match=r"unknown agent 'x'; choose llm, oracle or nop"):
        get_agent("x")
    assert not get_exporter("jsonl").builds_from_gold and get_exporter("harbor").builds_from_gold
    assert get_agent("llm").needs_model and not get_agent("oracle").needs_model
    with pytest.raises(BadInput, match="needs a model"):
        get_agent("llm")()


@pytest.mark.parametrize("args, needle", [
    (["rollout", "nowhere", "-o", "x", "--agent", "foo"], "unknown agent 'foo'; choose llm, oracle or nop"),
    (["invert", "nowhere", "-o", "x", "--agent", "foo"], "unknown agent 'foo'; choose operators or llm"),
    (["export", "nowhere", "--format", "swe"], "unknown format 'swe'; choose one of harbor, tb, jsonl"),
    (["rollout", "nowhere", "-o", "x", "--agent", "llm"], "needs --model and --base-url"),
    (["curate", "nowhere", "-o", "x"], "is not a directory"),
    (["images", "load", "nowhere.tar"], "does not exist"),
    (["images", "save", "empty", "-o", "gold.tar"], "holds no task, so no gold image to save"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "tasks.jsonl").write_text("")  # a JSONL export of no task
    proc = subprocess.run([sys.executable, "-m", "cligym", *args], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0], proc.stderr
    assert lines[0].startswith("cligym: error: ")


def test_console_script_and_module_entry_points():
    import tomllib

    project = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["cligym"] == "cligym.cli:main"
    assert callable(main)
    proc = _cli("version")
    assert proc.returncode == 0 and proc.stdout.strip()


def test_operators_json_lists_every_operator():
    import json

    proc = _cli("operators", "--json")
    rows = json.loads(proc.stdout)
    assert proc.returncode == 0 and len(rows) >= 40
    assert set(rows[0]) == {"name", "category", "broad", "default", "offline", "undone_by", "symptom", "hint"}
    named_only = {r["name"] for r in rows if not r["default"]}
    # the verifier undoes test configuration; code mutation is not environment breakage
    assert {r["name"] for r in rows if r["category"] in ("test_configuration", "code")} <= named_only
    assert all(r["offline"] for r in rows if r["default"])  # the default set is offline-fair


def test_the_command_line_starts_without_the_engine_or_the_stages():
    """Listing the verbs and their choices imports no stage implementation and no engine SDK."""
    code = ("import sys, cligym.cli\n"
            "heavy = [m for m in sys.modules if m.split('.')[0] in ('docker', 'openai') or m.startswith(("
            "'cligym.export.stage', 'cligym.rollout.stage', 'cligym.runtime', 'cligym.agents'))]\n"
            "print(heavy)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_cli_modules_are_short():
    for path in sorted((SRC / "cli").glob("*.py")):
        text = path.read_text()
        assert len(text.splitlines()) <= 400, path
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                assert node.end_lineno - node.lineno < 80, (path, node.name)


def _stages_imported(path: Path) -> set[str]:
    return {m for m in _imports(path) if m.split(".")[0] == "cligym" and len(m.split(".")) > 1
            and m.split(".")[1] in STAGES}


def test_dependencies_point_one_way():
    for stage in ("export", "validate", "rollout", "curate"):
        for path in (SRC / stage).rglob("*.py"):
            siblings = {m for m in _stages_imported(path) if m.split(".")[1] != stage}
            assert not siblings, (path, siblings)
    assert not _stages_imported(SRC / "harness" / "trial.py")
    for path in (SRC / "cli").glob("*.py"):
        assert not any(m == "docker" or m.startswith("docker.") for m in _imports(path)), path


def test_nothing_reaches_into_engine_objects():
    mine = [SRC / "cli", SRC / "export", SRC / "validate", SRC / "rollout", SRC / "curate"]
    for folder in mine:
        for path in folder.rglob("*.py"):
            text = path.read_text()
            assert ".container" not in text and "runtime.client" not in text and ".api." not in text, path
    assert ".container" not in (SRC / "harness" / "trial.py").read_text()
