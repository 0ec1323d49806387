"""What a project's tests need, read from every place projects declare it.

Everything is read statically from the unpacked source: nothing of the project runs.

- the test extras (``test``, ``tests``, ``testing``) of its core metadata, whichever tool
  wrote them: PKG-INFO's ``Requires-Dist: x; extra == "test"``, pyproject's
  ``[project.optional-dependencies]``, setup.cfg's ``[options.extras_require]``, and the
  literal ``extras_require`` / ``tests_require`` of setup.py;
- dependency groups of those names (PEP 735), hatch's test environments, pdm's and
  poetry's test (or dev) groups;
- tox's default environment (``[testenv]`` deps and extras, from tox.ini, setup.cfg's
  ``[testenv]`` or pyproject's ``legacy_tox_ini``/``env_run_base``), ``-r`` files followed;
- noxfile.py: the literal arguments of ``session.install`` in sessions that test;
- requirements files for tests: a pinned ``.txt`` is read instead of the ``.in`` it was
  compiled from.

What they say is merged; for one distribution an exact pin wins over a looser
requirement (the project's pins over the newest release). When none of them names any
requirement, dev groups and dev requirements files are read; when those are silent too,
the modules the test files import are mapped to distributions (``imports``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from packaging.utils import canonicalize_name

from cligym.gold.imports import imported_distributions
from cligym.gold.metadata import SourceTree, ini_lines, parse_ini, requirement, table

TEST_KEYS = ("test", "tests", "testing")
DEV_KEYS = ("dev", "develop", "development")
REQUIREMENT_FILES = (
    "requirements/tests", "requirements/test", "requirements/testing", "requirements-test", "requirements-tests",
    "requirements_test", "requirements_tests", "test-requirements", "find_test_requirements", "tests/requirements",
    "requirements/ci",
)
DEV_FILES = ("requirements-dev", "requirements_dev", "dev-requirements", "requirements/dev", "requirements/develop")
_FACTOR = re.compile(r"^[\w.,!{}-]+:\s")  # a tox line that holds only for some environments


class Found:
    """Requirements with where each source said them (in the order read)."""

    def __init__(self, project: str, extras: dict[str, list[str]]) -> None:
        self.project, self.extras = project, extras
        self.requirements: list[str] = []
        self.sources: list[str] = []

    def add(self, source: str, lines: list[str]) -> None:
        reqs = self._expand(lines)
        if reqs:
            self.sources.append(source)
            self.requirements += reqs

    def _expand(self, lines: list[str]) -> list[str]:
        """Requirement lines with the project's own extras (``proj[test]``, ``.[test]``)
        replaced by what they hold."""
        out: list[str] = []
        todo, seen = list(lines), set()
        while todo:
            raw = todo.pop(0).strip()
            own = re.fullmatch(r"(?:-e\s*)?\.?\[([\w,\s-]+)\]", raw)
            req = requirement(raw) if own is None else None
            if own is None and req is None:
                continue
            if own is not None or canonicalize_name(req.name) == canonicalize_name(self.project):
                for extra in (own.group(1).split(",") if own else sorted(req.extras)):
                    if extra.strip() not in seen:
                        seen.add(extra.strip())
                        todo += self.extras.get(extra.strip(), [])
                continue
            out.append(raw)
        return out


def find_test_requirements(tree: SourceTree, project: str) -> tuple[list[str], list[str]]:
    """(requirements, where they were declared) for the tests of the project in ``tree``."""
    path, extras = tree.path, tree.extras
    found = Found(project, extras)
    for key in TEST_KEYS:
        found.add(f"extra {key!r}", extras.get(key, []))
    _from_pyproject(found, tree.pyproject, TEST_KEYS)
    found.add("setup.py tests_require", tree.setup_literals.get("tests_require", []))
    _from_tox(found, tree)
    found.add("noxfile.py", _noxfile(tree))
    _from_files(found, path, REQUIREMENT_FILES)
    if not found.requirements:
        for key in DEV_KEYS:
            found.add(f"extra {key!r}", extras.get(key, []))
        _from_pyproject(found, tree.pyproject, DEV_KEYS)
        _from_files(found, path, DEV_FILES)
    if not found.requirements:
        found.add("imports of the test files", imported_distributions(path, project))
    return merge(found.requirements), found.sources


def merge(reqs: list[str]) -> list[str]:
    """One requirement per distribution and marker, in first-seen order: an exact pin wins
    over a range, a range over a bare name."""
    chosen: dict[tuple[str, str], str] = {}
    for raw in reqs:
        req = requirement(raw)
        if req is None:
            continue
        key = (canonicalize_name(req.name), str(req.marker or ""))
        if key not in chosen or _rank(raw) > _rank(chosen[key]):
            chosen[key] = raw
    return list(chosen.values())


def _rank(raw: str) -> int:
    req = requirement(raw)
    specs = list(req.specifier) if req else []
    return 2 if any(s.operator in ("==", "===") for s in specs) else 1 if specs else 0


def requirement_name(raw: str) -> str:
    """The canonical distribution name of a requirement line (its first word when it does
    not parse)."""
    req = requirement(raw)
    return canonicalize_name(req.name if req else re.split(r"[\s\[;<>=!~]", raw.strip(), maxsplit=1)[0])


# ---- tool configuration ----------------------------------------------------------------


def _from_pyproject(found: Found, data: dict, keys: tuple[str, ...]) -> None:
    groups, tool = table(data, "dependency-groups"), table(data, "tool")
    for key in keys:
        found.add(f"dependency group {key!r}", _group(groups, key, {key}))
    for key in ("default", "hatch-test", *keys):
        env = table(tool, "hatch", "envs", key)
        found.add(f"hatch env {key!r}", [*env.get("dependencies", []), *env.get("extra-dependencies", []),
                                         *(f".[{e}]" for e in env.get("features", []))])
    pdm = table(tool, "pdm", "dev-dependencies")
    for key in keys:
        found.add(f"pdm dev group {key!r}", [r for r in pdm.get(key, []) if isinstance(r, str)])
    for key in keys:
        found.add(f"poetry group {key!r}", _poetry(table(tool, "poetry", "group", key, "dependencies")))
    if "dev" in keys:
        found.add("poetry dev-dependencies", _poetry(table(tool, "poetry", "dev-dependencies")))
    base = table(tool, "tox", "env_run_base")
    found.add("pyproject tox env_run_base", [*base.get("deps", []), *(f".[{e}]" for e in base.get("extras", []))])


def _poetry(deps: dict) -> list[str]:
    """Poetry's ``name = "^1.2"`` tables as plain names (its caret ranges are not PEP 440;
    an exact version stays pinned)."""
    out = []
    for name, spec in deps.items():
        if name.lower() == "python":
            continue
        version = spec if isinstance(spec, str) else (spec or {}).get("version", "") if isinstance(spec, dict) else ""
        out.append(f"{name}=={version}" if re.fullmatch(r"\d+(\.\d+)*", version or "") else name)
    return out


def _from_tox(found: Found, tree: SourceTree) -> None:
    sources = [("tox.ini", tree.ini("tox.ini")), ("setup.cfg", tree.ini("setup.cfg"))]
    legacy = table(tree.pyproject, "tool", "tox").get("legacy_tox_ini")
    if isinstance(legacy, str):
        sources.append(("pyproject legacy_tox_ini", parse_ini(legacy, "pyproject.toml's legacy_tox_ini")))
    for name, cfg in sources:
        if cfg is None or not cfg.has_section("testenv"):
            continue
        deps, extras = [], ini_lines(cfg.get("testenv", "extras", fallback=""), commas=True)
        for line in ini_lines(cfg.get("testenv", "deps", fallback="")):
            if _FACTOR.match(line) or "{" in line:
                continue  # only some environments, or a substitution
            deps += _requirement_lines(tree.path, line, tree.path)
        found.add(f"{name} [testenv]", [*deps, *(f".[{e}]" for e in extras)])


def _noxfile(tree: SourceTree) -> list[str]:
    """The literal arguments of ``session.install`` in noxfile.py's sessions that test."""
    out: list[str] = []
    for fn in tree.module("noxfile.py").body:
        if not isinstance(fn, ast.FunctionDef) or not ("test" in fn.name or "pytest" in ast.dump(fn)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "install":
                args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                out += _argument_requirements(tree.path, args)
    return out


def _argument_requirements(path: Path, args: list[str]) -> list[str]:
    out, follow = [], False
    for arg in args:
        if follow:
            out += _read_requirements(path / arg, path)
            follow = False
        elif arg in ("-r", "--requirement"):
            follow = True
        elif not arg.startswith("-") or arg.startswith("-e"):
            out.append(arg.removeprefix("-e").strip())
    return out


def _from_files(found: Found, path: Path, stems: tuple[str, ...]) -> None:
    for stem in stems:
        pinned, loose = path / f"{stem}.txt", path / f"{stem}.in"
        chosen = pinned if pinned.is_file() else loose if loose.is_file() else None
        if chosen is not None:
            found.add(str(chosen.relative_to(path)), _read_requirements(chosen, path))


def _read_requirements(file: Path, root: Path, depth: int = 0) -> list[str]:
    """A pip requirements file's requirements (``-r`` followed, options and hashes left out)."""
    if depth > 5 or not file.is_file() or not file.resolve().is_relative_to(root.resolve()):
        return []
    text = re.sub(r"\\\n", " ", file.read_text(encoding="utf-8", errors="replace"))
    out: list[str] = []
    for line in text.splitlines():
        out += _requirement_lines(file.parent, line, root, depth)
    return out


def _requirement_lines(folder: Path, line: str, root: Path, depth: int = 0) -> list[str]:
    line = re.sub(r"\s--hash[= ]\S+", "", line.split(" #")[0]).strip()
    if not line or line.startswith("#"):
        return []
    include = re.match(r"^(?:-r|--requirement)\s*(\S+)", line)
    if include:
        return _read_requirements(folder / include.group(1), root, depth + 1)
    if line.startswith("-e") and "[" in line:
        return [line]
    return [] if line.startswith("-") else [line]


def _group(groups: dict, key: str, seen: set[str]) -> list[str]:
    out: list[str] = []
    for item in groups.get(key, []):
        if isinstance(item, dict) and "include-group" in item:
            inner = item["include-group"]
            if inner not in seen:
                seen.add(inner)
                out += _group(groups, inner, seen)
        elif isinstance(item, str):
            out.append(item)
    return out
