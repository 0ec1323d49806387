"""The tree reads as the pipeline: every import points down the layering, no engine type
leaves the runtime, no on-disk name outside the layout module, and no function or module
grows past its size limit. Checked from the source, so a regression fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "cligym"

#: Lower levels never import higher ones; packages on one level are siblings and never
#: import each other.
LEVELS: list[set[str]] = [
    {"errors", "config", "ui", "__init__"},
    {"models"},
    {"layout", "runtime"},
    {"harness", "agents"},
    {"verify", "issue"},
    {"gold", "invert", "export", "validate", "rollout", "curate", "report"},
    {"dataset"},
    {"cli"},
    {"__main__"},
]
LEVEL = {name: level for level, names in enumerate(LEVELS) for name in names}

#: File and folder names of the on-disk layout: only cligym/layout.py may spell them.
LAYOUT_NAMES = {
    "gold.json", "probe.json", "config.json", "summary.json", "verify.json", "instance.json", "issues.json",
    "candidates", "tasks", "trajectories", "result.json", "trajectory.json", "sft.jsonl", "tasks.jsonl",
    "task.toml", "task.yaml", "instruction.md", "test.sh", "solve.sh", "solution.sh", "run-tests.sh",
    "docker-compose.yaml", "environment",
}
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 400


def package_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py")


def cligym_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, first component below cligym) of every import of cligym, wherever it stands."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "cligym":
                if len(parts) > 1:
                    found.append((node.lineno, parts[1]))
                else:  # from cligym import x: x is a subpackage or a top-level name
                    found += [(node.lineno, alias.name) for alias in node.names if alias.name in LEVEL]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "cligym" and len(parts) > 1:
                    found.append((node.lineno, parts[1]))
    return sorted(found)


def layering_violations(package: str, tree: ast.AST) -> list[str]:
    mine = LEVEL.get(package)
    if mine is None:
        return [f"{package} is on no level of the layering"]
    bad = []
    for line, target in cligym_imports(tree):
        if target == package or target not in LEVEL:
            continue
        if LEVEL[target] > mine:
            bad.append(f"line {line}: {package} imports {target}, a higher level")
        elif LEVEL[target] == mine:
            bad.append(f"line {line}: {package} imports its sibling {target}")
    return bad


def modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_down(path: Path) -> None:
    assert layering_violations(package_of(path), ast.parse(path.read_text(encoding="utf-8"))) == []


def test_the_checker_sees_upward_and_sideways_imports() -> None:
    tree = ast.parse("from cligym.invert.search import invert\n"
                     "def f():\n    from cligym.rollout import stage\n"
                     "import cligym.cli\nfrom cligym.models import GoldEnv\n")
    assert layering_violations("verify", tree) == [
        "line 1: verify imports invert, a higher level",
        "line 3: verify imports rollout, a higher level",
        "line 4: verify imports cli, a higher level",
    ]
    assert layering_violations("rollout", ast.parse("from cligym.validate.stage import x\n")) == [
        "line 1: rollout imports its sibling validate",
    ]


def test_named_stage_edges_are_absent() -> None:
    """The edges the redesign removed, named one by one."""
    forbidden = {"verify": {"invert"}, "export": {"invert"}, "issue": {"invert"},
                 "invert": {"rollout", "validate", "export"}, "rollout": {"validate"}}
    for path in modules():
        package = package_of(path)
        targets = {t for _, t in cligym_imports(ast.parse(path.read_text(encoding="utf-8")))}
        assert not targets & forbidden.get(package, set()), f"{path.relative_to(SRC)} imports {targets}"


def test_only_the_runtime_knows_the_engine() -> None:
    for path in modules():
        if package_of(path) == "runtime":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name.split(".")[0] not in ("docker", "requests"), f"{path.relative_to(SRC)} imports {name}"


#: Top directories of paths inside a container (not the host's on-disk layout).
CONTAINER_ROOTS = {"tmp", "tests", "solution", "logs", "testbed", "etc", "usr", "opt", "root", "var"}
#: Calls whose string arguments are paths.
PATH_CALLS = {"Path", "PurePosixPath", "joinpath", "glob", "rglob", "open", "with_name", "mkdir"}


def spelled_paths(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants used as on-disk names: an operand of ``/``, an argument of a path
    call, or a path-like string (no spaces) with a layout name among its ``/`` parts."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        value, parent = node.value, parents.get(node)
        if value in LAYOUT_NAMES:
            in_path = isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div)
            if isinstance(parent, ast.Call):
                func = parent.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                in_path = name in PATH_CALLS
            if in_path:
                found.append((node.lineno, value))
        elif "/" in value and " " not in value and set(value.split("/")) & LAYOUT_NAMES:
            if value.split("/")[:2][-1] not in CONTAINER_ROOTS:  # "/tmp/solution.sh" is no host path
                found.append((node.lineno, value))
    return sorted(found)


def test_no_layout_name_outside_the_layout_module() -> None:
    for path in modules():
        if path.name == "layout.py" and path.parent == SRC:
            continue
        spelled = spelled_paths(ast.parse(path.read_text(encoding="utf-8")))
        assert spelled == [], f"{path.relative_to(SRC)} spells on-disk names: {spelled}"


def test_the_checker_sees_spelled_paths_and_leaves_other_strings() -> None:
    tree = ast.parse('''run_dir / "tasks" / x / "instance.json"
Path("gold.json")
root.glob("*/instance.json")
f"{root}/candidates/{n}.json"
report = {"tasks": 3}
help_text = "writes RUN_DIR/tasks/*/instance.json"
''')
    assert spelled_paths(tree) == [(1, "instance.json"), (1, "tasks"), (2, "gold.json"), (3, "*/instance.json"),
                                   (4, "/candidates/")]


def test_functions_and_modules_stay_small() -> None:
    too_long = []
    for path in modules():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            too_long.append(f"{path.relative_to(SRC)}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}: {length} lines")
    assert too_long == []
