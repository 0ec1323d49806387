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
import configparser
import re
import tomllib
from email.parser import HeaderParser
from pathlib import Path

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cligym.gold.imports import imported_distributions
from cligym.gold.source import archive_text

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

    def __init__(self, project: str, extras: dict[str, list[str]], root: Path) -> None:
        self.project, self.extras, self.root = project, extras, root
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
            req = _requirement(raw) if own is None else None
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


def find_test_requirements(path: Path, project: str, archive: Path | None = None) -> tuple[list[str], list[str]]:
    """(requirements, where they were declared) for the tests of the project in ``path``
    (unpacked from the sdist ``archive``, whose egg-info metadata is read too)."""
    extras = declared_extras(path, archive)
    found = Found(project, extras, path)
    for key in TEST_KEYS:
        found.add(f"extra {key!r}", extras.get(key, []))
    _from_pyproject(found, path, TEST_KEYS)
    found.add("setup.py tests_require", setup_literals(path).get("tests_require", []))
    _from_tox(found, path)
    found.add("noxfile.py", _noxfile(path))
    _from_files(found, path, REQUIREMENT_FILES)
    if not found.requirements:
        for key in DEV_KEYS:
            found.add(f"extra {key!r}", extras.get(key, []))
        _from_pyproject(found, path, DEV_KEYS)
        _from_files(found, path, DEV_FILES)
    if not found.requirements:
        found.add("imports of the test files", imported_distributions(path, project))
    return merge(found.requirements), found.sources


def merge(reqs: list[str]) -> list[str]:
    """One requirement per distribution and marker, in first-seen order: an exact pin wins
    over a range, a range over a bare name."""
    chosen: dict[tuple[str, str], str] = {}
    for raw in reqs:
        req = _requirement(raw)
        if req is None:
            continue
        key = (canonicalize_name(req.name), str(req.marker or ""))
        if key not in chosen or _rank(raw) > _rank(chosen[key]):
            chosen[key] = raw
    return list(chosen.values())


def _rank(raw: str) -> int:
    req = _requirement(raw)
    specs = list(req.specifier) if req else []
    return 2 if any(s.operator in ("==", "===") for s in specs) else 1 if specs else 0


def requirement_name(raw: str) -> str:
    """The canonical distribution name of a requirement line (its first word when it does
    not parse)."""
    req = _requirement(raw)
    return canonicalize_name(req.name if req else re.split(r"[\s\[;<>=!~]", raw.strip(), maxsplit=1)[0])


def _requirement(raw: str) -> Requirement | None:
    try:
        return Requirement(raw)
    except (InvalidRequirement, InvalidMarker):
        return None


# ---- core metadata extras --------------------------------------------------------------


def declared_extras(path: Path, archive: Path | None = None) -> dict[str, list[str]]:
    """Every extra the project declares: pyproject, setup.cfg (setuptools' and pbr's
    sections), setup.py's literal ``extras_require``, and the metadata a build backend
    wrote into the sdist (PKG-INFO, egg-info's requires.txt)."""
    extras: dict[str, list[str]] = {}
    data = _pyproject(path)
    for key, value in (data.get("project", {}).get("optional-dependencies", {}) or {}).items():
        extras.setdefault(key, list(value))
    cfg = _ini(path / "setup.cfg")
    for section in ("options.extras_require", "extras"):  # setuptools, pbr
        if cfg is not None and cfg.has_section(section):
            for key, value in cfg.items(section):
                extras.setdefault(key.split(":")[0], _lines(value))
    for key, value in (setup_literals(path).get("extras_require") or {}).items():
        extras.setdefault(str(key).split(":")[0], [str(v) for v in value] if isinstance(value, list | tuple) else [])
    for key, value in [*_pkg_info_extras(path).items(), *_requires_txt(archive).items()]:
        if value:
            extras.setdefault(key, value)
    return extras


def _requires_txt(archive: Path | None) -> dict[str, list[str]]:
    """The extras of the egg-info ``requires.txt`` setuptools wrote into an sdist:
    ``[name]`` or ``[name:marker]`` sections of requirement lines."""
    text = archive_text(archive, re.compile(r"^[^/]+/(src/)?[^/]+\.egg-info/requires\.txt$")) if archive else None
    extras: dict[str, list[str]] = {}
    current = None
    for line in (text or "").splitlines():
        line = line.strip()
        section = re.fullmatch(r"\[([^\]:]*)(?::(.*))?\]", line)
        if section:
            current, marker = section.group(1), section.group(2)
            extras.setdefault(current, [])
        elif line and current:
            extras[current].append(f"{line}; {marker}" if marker else line)
    return extras


def _pkg_info_extras(path: Path) -> dict[str, list[str]]:
    info = path / "PKG-INFO"
    if not info.is_file():
        return {}
    headers = HeaderParser().parsestr(info.read_text(encoding="utf-8", errors="replace"))
    extras: dict[str, list[str]] = {name: [] for name in headers.get_all("Provides-Extra") or []}
    for raw in headers.get_all("Requires-Dist") or []:
        req = _requirement(raw)
        if req is None or req.marker is None:
            continue
        for extra in extras:
            if _in_extra(req, extra):
                extras[extra].append(_without_extra_marker(req))
    return extras


def _in_extra(req: Requirement, extra: str) -> bool:
    try:
        return req.marker.evaluate({"extra": extra}) and not req.marker.evaluate({"extra": "\0none"})
    except Exception:
        return False


def _without_extra_marker(req: Requirement) -> str:
    return f"{req.name}{'[' + ','.join(sorted(req.extras)) + ']' if req.extras else ''}{req.specifier}"


def setup_literals(path: Path) -> dict:
    """The keyword arguments of setup.py's ``setup()`` call that are literals (names bound
    at module level to literals are followed; anything computed is left out)."""
    setup = path / "setup.py"
    if not setup.is_file():
        return {}
    try:
        tree = ast.parse(setup.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return {}
    bound = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    out: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            for kw in node.keywords:
                if kw.arg:
                    value = bound.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
                    try:
                        out[kw.arg] = ast.literal_eval(value)
                    except (ValueError, TypeError, SyntaxError, RecursionError):
                        pass
    return out


# ---- tool configuration ----------------------------------------------------------------


def _from_pyproject(found: Found, path: Path, keys: tuple[str, ...]) -> None:
    data = _pyproject(path)
    groups = data.get("dependency-groups", {}) or {}
    tool = data.get("tool", {}) or {}
    for key in keys:
        found.add(f"dependency group {key!r}", _group(groups, key, {key}))
    envs = tool.get("hatch", {}).get("envs", {}) or {}
    for key in ("default", "hatch-test", *keys):
        env = envs.get(key) or {}
        found.add(f"hatch env {key!r}", [*env.get("dependencies", []), *env.get("extra-dependencies", []),
                                         *(f".[{e}]" for e in env.get("features", []))])
    pdm = (tool.get("pdm", {}) or {}).get("dev-dependencies", {}) or {}
    for key in keys:
        found.add(f"pdm dev group {key!r}", [r for r in pdm.get(key, []) if isinstance(r, str)])
    poetry = tool.get("poetry", {}) or {}
    for key in keys:
        found.add(f"poetry group {key!r}", _poetry(poetry.get("group", {}).get(key, {}).get("dependencies", {})))
    if "dev" in keys:
        found.add("poetry dev-dependencies", _poetry(poetry.get("dev-dependencies", {})))
    tox = tool.get("tox", {}) or {}
    base = tox.get("env_run_base", {}) or {}
    found.add("pyproject tox env_run_base", [*base.get("deps", []), *(f".[{e}]" for e in base.get("extras", []))])


def _poetry(table: dict) -> list[str]:
    """Poetry's ``name = "^1.2"`` tables as plain names (its caret ranges are not PEP 440;
    an exact version stays pinned)."""
    out = []
    for name, spec in (table or {}).items():
        if name.lower() == "python":
            continue
        version = spec if isinstance(spec, str) else (spec or {}).get("version", "") if isinstance(spec, dict) else ""
        out.append(f"{name}=={version}" if re.fullmatch(r"\d+(\.\d+)*", version or "") else name)
    return out


def _from_tox(found: Found, path: Path) -> None:
    sources = [("tox.ini", _ini(path / "tox.ini")), ("setup.cfg", _ini(path / "setup.cfg"))]
    legacy = (_pyproject(path).get("tool", {}).get("tox", {}) or {}).get("legacy_tox_ini")
    if isinstance(legacy, str):
        sources.append(("pyproject legacy_tox_ini", _ini_text(legacy)))
    for name, cfg in sources:
        if cfg is None or not cfg.has_section("testenv"):
            continue
        deps, extras = [], _lines(cfg.get("testenv", "extras", fallback=""), commas=True)
        for line in _lines(cfg.get("testenv", "deps", fallback="")):
            if _FACTOR.match(line) or "{" in line:
                continue  # only some environments, or a substitution
            deps += _requirement_lines(path, line, path)
        found.add(f"{name} [testenv]", [*deps, *(f".[{e}]" for e in extras)])


def _noxfile(path: Path) -> list[str]:
    """The literal arguments of ``session.install`` in noxfile.py's sessions that test."""
    nox = path / "noxfile.py"
    if not nox.is_file():
        return []
    try:
        tree = ast.parse(nox.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return []
    out: list[str] = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or not ("test" in fn.name or "pytest" in ast.dump(fn)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "install":
                args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                out += _argument_requirements(path, args)
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


# ---- reading files ---------------------------------------------------------------------


def _pyproject(path: Path) -> dict:
    file = path / "pyproject.toml"
    if not file.is_file():
        return {}
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _ini(file: Path) -> configparser.ConfigParser | None:
    return _ini_text(file.read_text(encoding="utf-8", errors="replace")) if file.is_file() else None


def _ini_text(text: str) -> configparser.ConfigParser | None:
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read_string(text)
    except configparser.Error:
        return None
    return cfg


def _lines(value: str, commas: bool = False) -> list[str]:
    """The items of a multi-line ini value (also comma-separated ones when ``commas``)."""
    text = value.replace(",", "\n") if commas else value
    return [ln.split(" #")[0].strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


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
