"""Operators: dependency_versions (what the project's dependencies provide).

Here lives ``Reinstall``, the base of every operator (of any category) whose repair
reinstalls the target's distribution from the wheel the image keeps in its local
wheelhouse: offline, and with no bytes carried in the solution.
"""

from __future__ import annotations

import ast
import posixpath
import re

from packaging.utils import canonicalize_name

from cligym.invert.operators.base import GoldFiles, Operator, register
from cligym.invert.operators.probing import (
    TEST_FILE,
    dist_tops,
    is_tooling,
    narrow_first,
    project_root,
    reinstall_line,
    site_packages,
    source_tops,
    tests_using,
    tooling_tops,
    under,
)
from cligym.invert.operators.targets import Target, TargetData, q
from cligym.models.probe import Dist, Probe

CATEGORY = "dependency_versions"


def project_tops(probe: Probe) -> set[str]:
    return source_tops(probe, project_root(probe)) - {"noxfile"}


def dependencies(probe: Probe) -> list[Dist]:
    """Installed distributions other than the project itself and the test tooling."""
    own = project_tops(probe)
    site = site_packages(probe)
    out = []
    for dist in probe.dists:
        tops = dist_tops(dist)
        if is_tooling(dist) or not dist.path or not under(dist.path, site):
            continue
        if not tops or set(tops) & (own | tooling_tops(probe)):
            continue
        out.append(dist)
    return sorted(out, key=lambda d: canonicalize_name(d.name))


def module_of(tops: list[str]):
    return lambda mod: mod.split(".")[0] in tops


def older_version(version: str) -> str | None:
    """A plausible older release than ``version`` (an incompatible one where possible)."""
    m = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if not m:
        return None
    major, minor, micro = (int(x or 0) for x in m.groups())
    if major > 1:
        return f"{major - 1}.0.0"
    if major == 1:
        return "0.9.0"
    if minor > 0:
        return f"0.{minor - 1}.0"
    return f"0.0.{micro - 1}" if micro > 0 else None


def set_version_cmd(metadata: str, version: str) -> str:
    return f"sed -i '0,/^Version: /s/^Version: .*/Version: {version}/' {q(metadata)}"


# ---- the repair: reinstall the distribution from the image's wheelhouse ------------------


def owner(probe: Probe, path: str) -> Dist | None:
    """The installed distribution whose RECORD lists the file ``path`` (a real path), or None."""
    for dist in probe.dists:
        if not dist.path:
            continue
        site = posixpath.dirname(dist.path)
        if any(posixpath.normpath(posixpath.join(site, entry)) == path for entry in dist.files):
            return dist
    return None


class WheelData(TargetData):
    """Data of a target whose repair reinstalls its distribution from the image's wheelhouse."""

    dist: str = ""
    version: str = ""
    #: the shell line that reinstalls dist==version from the wheel in the image ("" if none)
    reinstall: str = ""


def wheel_data(probe: Probe, dist: Dist | None) -> dict[str, str]:
    """``WheelData`` fields for ``dist`` (empty ones when there is no distribution)."""
    if dist is None:
        return {}
    line = reinstall_line(probe, dist.name, dist.version) or ""
    return {"dist": dist.name, "version": dist.version, "reinstall": line}


REINSTALL = (
    "Reinstall {dist}=={version} from the local wheelhouse pip is configured with "
    "(pip install --force-reinstall --no-deps), which needs no network."
)


class Reinstall(Operator):
    """An operator whose repair reinstalls the target's distribution (``WheelData``) from
    its wheel in the image, with pip and no index: the solution carries no bytes.
    ``prepare`` refuses a target whose wheel the image lacks, then asks ``inspect``."""

    Data = WheelData
    offline = REINSTALL

    def inspect(self, target: Target, gold: GoldFiles) -> Target | None:
        """The target (with any details added) if the gold image suits it, else None."""
        return target

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        return self.inspect(target, gold) if target.data.reinstall else None

    def solution(self, target: Target) -> list[str]:
        return [target.data.reinstall]


# ---- which project reference to break --------------------------------------------------


def _definitions(source: str) -> dict[str, tuple[int, str]]:
    """Top-level def/class names of a module: name -> (line number, keyword)."""
    keywords = {ast.ClassDef: "class", ast.AsyncFunctionDef: "async def", ast.FunctionDef: "def"}
    out: dict[str, tuple[int, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.ClassDef, ast.AsyncFunctionDef, ast.FunctionDef)):
            out.setdefault(node.name, (node.lineno, keywords[type(node)]))
    return out


def _reexports(source: str, module: str, is_pkg: bool) -> dict[str, tuple[str, str]]:
    """Names a module imports from elsewhere: name -> (module it comes from, original name)."""
    out = {}
    package = module if is_pkg else module.rpartition(".")[0]
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                key = f"*{base}" if alias.name == "*" else alias.asname or alias.name
                out[key] = (base, alias.name)
    return out


def project_references(sources: list[str], tops: list[str]) -> list[tuple[str, str]]:
    """(module, name) pairs the project's code takes from modules under ``tops``; the ones
    it reaches only inside function bodies first (removing such a name fails just the tests
    that call those functions, not every import of the project), then public before private."""
    refs: set[tuple[str, str]] = set()
    eager: set[tuple[str, str]] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        aliases: dict[str, str] = {}
        lazy = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                for n in ast.walk(f) if n is not f}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module \
                    and node.module.split(".")[0] in tops:
                for alias in node.names:
                    if alias.name != "*":
                        refs.add((node.module, alias.name))
                        if id(node) not in lazy:
                            eager.add((node.module, alias.name))
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in tops:
                        bound = alias.asname or alias.name.split(".")[0]
                        aliases[bound] = alias.name if alias.asname else bound
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                refs.add((aliases[node.value.id], node.attr))
                if id(node) not in lazy:
                    eager.add((aliases[node.value.id], node.attr))
    return sorted(refs, key=lambda r: (r in eager, r[1].startswith("_"), r[0], r[1]))


def find_definition(read, modules: dict[str, str], module: str, name: str, hops: int = 3):
    """(file, line, keyword) of the top-level def/class that ``module.name`` resolves to,
    following re-exports (``from .x import name``, ``from .x import *``)."""
    path = modules.get(module)
    if hops <= 0 or not path or not path.endswith(".py") or (raw := read(path)) is None:
        return None
    try:
        source = raw.decode()
        found = _definitions(source)
        imports = _reexports(source, module, path.endswith("/__init__.py"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    if name in found:
        return path, *found[name]
    if name in imports:
        base, original = imports[name]
        if f"{base}.{original}" in modules:
            return None  # a submodule, not a def/class
        return find_definition(read, modules, base, original, hops - 1)
    for base, star in imports.values():
        if star == "*" and (hit := find_definition(read, modules, base, name, hops - 1)):
            return hit
    return None


class ApiRemovedData(WheelData):
    dist_path: str  # its .dist-info directory
    tops: list[str]
    # what prepare searches, dropped once it has chosen
    modules: dict[str, str] = {}
    project_files: list[str] = []
    # what prepare chose: the def/class renamed (at ``line``, by keyword ``kw``) and the
    # version the metadata then claims
    older: str = ""
    line: int = 0
    kw: str = ""


@register
class DependencyApiRemoved(Reinstall):
    """A half-rolled-back upgrade: an older release's module copied over the installed one,
    so a function or class the project uses is gone and the metadata names the older
    release."""

    name = "dependency_api_removed"
    undone_by = "venv_recreated"
    symptom = ("Code of the project fails with ImportError ('cannot import name') or AttributeError "
               "('has no attribute'): {dist} seems to lack {name}.")
    hint = "Which release of the dependency {dist} is installed, and what API that release provides."
    shows = (r"cannot import name", r"has no attribute")
    Data = ApiRemovedData

    def applies_to(self, probe, tests):
        own = project_tops(probe)
        root = project_root(probe)
        site = site_packages(probe)
        project_files = sorted({
            path for mod, path in probe.modules.items()
            if mod.split(".")[0] in own and path.endswith(".py") and (under(path, root) or under(path, site))
            and not TEST_FILE.search(path) and "/tests/" not in path
        })
        if not project_files:
            return []
        targets = []
        for dist in dependencies(probe):
            tops = dist_tops(dist)
            modules = {m: p for m, p in probe.modules.items() if m.split(".")[0] in tops and under(p, site)}
            if not modules or f"{dist.path}/METADATA" not in probe.files:
                continue
            targets.append(self.target(
                name=dist.name, touching=tests_using(probe, tests, "modules", module_of(tops)),
                dist_path=dist.path, tops=tops, modules=modules, project_files=project_files,
                **wheel_data(probe, dist),
            ))
        return narrow_first(targets)

    def inspect(self, target, gold: GoldFiles):
        d = target.data
        older = older_version(d.version)
        metadata = gold.read(f"{d.dist_path}/METADATA")
        if older is None or metadata is None or not re.search(rb"^Version: ", metadata, re.MULTILINE):
            return None
        sources = [raw.decode("utf-8", "replace") for p in d.project_files if (raw := gold.read(p))]
        for module, name in project_references(sources, d.tops):
            found = find_definition(gold.read, d.modules, module, name)
            if found is None:
                continue
            path, line, kw = found
            data = d.replace(modules={}, project_files=[], older=older, line=line, kw=kw)
            return target.model_copy(update={"path": path, "name": name, "data": data})
        return None

    def apply(self, target):
        d = target.data
        rename = f"sed -i '{d.line}s/^{d.kw} {target.name}\\b/{d.kw} _{target.name}/' {q(target.path)}"
        return [f"RUN {rename} && {set_version_cmd(d.dist_path + '/METADATA', d.older)}"]


def _installed_paths(probe: Probe, dist: Dist, children: list[str]) -> list[str]:
    """The top-level packages/modules of ``dist`` in site-packages, then its dist-info."""
    site = site_packages(probe)
    paths = set()
    for top in dist_tops(dist):
        paths |= {p for p in (f"{site}/{top}", f"{site}/{top}.py") if p in probe.files}
        paths |= {p for p in children if p.rpartition("/")[2].startswith(top + ".cpython-")}
    return sorted(paths) + ([dist.path] if dist.path else [])


class UninstalledData(WheelData):
    paths: list[str]  # its top-level packages and modules, then its dist-info


@register
class DependencyUninstalled(Reinstall):
    """A half-finished ``pip uninstall`` (or a cleanup script that deleted a package it
    took for unused): a declared dependency's package and metadata are gone."""

    name = "dependency_uninstalled"
    undone_by = "venv_recreated"
    symptom = "Importing the project fails with ModuleNotFoundError for a module of {dist}, a declared dependency."
    hint = "Which packages are installed in the project's virtual environment."
    shows = (r"No module named", r"ModuleNotFoundError")
    Data = UninstalledData

    def applies_to(self, probe, tests):
        site = site_packages(probe)
        children = [p for p in probe.files if p.rpartition("/")[0] == site]
        targets = []
        for dist in dependencies(probe):
            paths = _installed_paths(probe, dist, children)
            if len(paths) < 2 or dist.path not in probe.files:
                continue
            tops = dist_tops(dist)
            targets.append(self.target(path=paths[0], name=dist.name, paths=paths, **wheel_data(probe, dist),
                                       touching=tests_using(probe, tests, "modules", module_of(tops))))
        return narrow_first(targets)

    def apply(self, target):
        return ["RUN rm -rf " + " ".join(q(p) for p in target.data.paths)]


class MismatchData(WheelData):
    older: str  # the version the metadata claims instead


@register
class DependencyVersionMismatch(Reinstall):
    """Metadata left behind by a botched downgrade: the installed code is the expected
    release, but its METADATA claims an older one, so version checks take the old paths."""

    name = "dependency_version_mismatch"
    symptom = (
        "Tests fail or take unexpected code paths: {dist} reports an older version than the one "
        "the project requires."
    )
    hint = "The version that the installed distribution {dist} declares about itself."
    shows = (r"\bversion", r"VersionConflict", r"requires? \S+ ?[<>=]=")
    Data = MismatchData

    def applies_to(self, probe, tests):
        targets = []
        for dist in dependencies(probe):
            path = f"{dist.path}/METADATA"
            older = older_version(dist.version)
            if path not in probe.files or older is None:
                continue
            targets.append(self.target(path=path, name=dist.name, older=older, **wheel_data(probe, dist),
                                       touching=probe.touching(tests, "files", path)))
        return narrow_first(targets)

    def inspect(self, target, gold):
        raw = gold.read(target.path)
        return target if raw and re.search(rb"^Version: ", raw, re.MULTILINE) else None

    def apply(self, target):
        return [f"RUN {set_version_cmd(target.path, target.data.older)}"]
