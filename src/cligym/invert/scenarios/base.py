"""The scenario model: an incident of 2–4 interacting changes, planned from the probe.

A scenario is a seeded, token-free generator modelled on one class of real incident. From
a ``Site`` (the probe, the sampled tests, the gold image's files) it plans a ``Plan``: its
changes in the order ΔD applies them (``PlannedChange``: Dockerfile lines, one repair step,
the paths it injected, whether it is a fault or a blocker), the order the repair runs, the
obvious repair the blockers defeat (``naive``), and the tests predicted to fail.

The changes of one plan are meant to interact: a fault that hides another (repairing the
first reveals the second), a blocker that makes the obvious repair fail. The pipeline
holds every plan to leave-one-repair-out and the blocker check; nothing here is trusted.

Most scenarios work on a ``Submodule``: a submodule of an installed distribution that
some, not all, sampled tests import, whose wheel the image keeps (so the repair is
offline). The shared breakages of such a module live here as ``PlannedChange`` builders.
"""

from __future__ import annotations

import ast
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
import re
from typing import ClassVar, Literal, TypeVar

from pydantic import BaseModel, Field

from cligym.invert.operators.base import GoldFiles
from cligym.invert.operators.package_files import installed_files, kept_prefix, submodules
from cligym.invert.operators.probing import reinstall_line, site_packages, wheel_for
from cligym.invert.operators.targets import pycache_glob, q
from cligym.models.probe import Probe
from cligym.models.task import RepairStep


class PlannedChange(BaseModel):
    """One change of a scenario: how ΔD makes it, how the repair undoes it, what it touched."""

    name: str
    category: str
    role: Literal["fault", "blocker"] = "fault"
    dockerfile: list[str]
    repair: list[str]
    places: list[str]
    symptom: str
    hint: str
    offline: str
    shows: list[str] = Field(default_factory=list)

    @property
    def step(self) -> RepairStep:
        return RepairStep(label=f"{self.category}: {self.name}", lines=self.repair)


class Plan(BaseModel):
    scenario: str
    changes: list[PlannedChange]  # in the order ΔD applies them
    repair_order: list[int]  # indexes into changes, in the order the repair runs
    naive: list[RepairStep] = Field(default_factory=list)
    touching: list[str]  # the sampled tests predicted to fail


class Submodule(BaseModel):
    """A submodule of an installed distribution, with its wheel and the tests reaching it."""

    module: str
    path: str
    dist: str
    version: str
    dist_info: str  # the distribution's .dist-info folder
    package: str  # the folder of its top-level package
    size: int
    reinstall: str  # the line reinstalling the distribution from the image's wheelhouse
    wheel: str
    touching: list[str]

    @property
    def top(self) -> str:
        return self.module.split(".", 1)[0]

    @property
    def inner(self) -> str:
        """The module's path inside its top-level package's folder."""
        return self.path[len(self.package) + 1:]


T = TypeVar("T")


def spread_draw(rng: random.Random, items: Sequence[T], keys: Sequence[tuple[str, frozenset[str]]],
                used: Mapping[str, int], failing: Mapping[frozenset[str], int]) -> T:
    """One of ``items`` (each with the path it breaks and the tests it touches, ``keys``),
    drawn by what it would fail: first a set of tests (a narrow one likelier; one whose
    tests a task of the run already fails much less likely: each such task divides its
    weight by 8 — a new symptom before a new blocker over an old one), then one of that
    set's items (one whose path earlier tasks broke much less likely). A package of hundreds
    of files weighs as one symptom, not as hundreds: else one large dependency's tests would
    get most of a run's draws."""
    sizes = Counter(touching for _, touching in keys)
    worn = {key: sum(n for tests, n in failing.items() if key <= tests) for key in sizes}
    return rng.choices(items, weights=[1.0 / max(1, len(key)) / sizes[key] / 8 ** (used.get(path, 0) + worn[key])
                                       for path, key in keys])[0]


class Site:
    """What a scenario plans from: the probe, the sampled tests, the gold image's files."""

    #: paths the scenario about to plan may not pick (set by the scenario degrader)
    avoid: AbstractSet[str] = frozenset()

    def __init__(self, probe: Probe, tests: list[str], files: GoldFiles) -> None:
        self.probe, self.tests, self.files = probe, tests, files
        self.site = site_packages(probe)
        self.stdlib = probe.python.get("stdlib", "/usr/lib/python3")
        self.prefix = probe.python.get("prefix", "/opt/venv")
        self._subs: list[Submodule] | None = None
        #: whether a plan may delete one function rather than a module (a degrader whose
        #: narrow plans keep missing turns it off)
        self.narrow = True
        #: how often earlier tasks of the run broke each path: ``pick`` prefers fresh targets,
        #: so a run's tasks spread over what the tests touch
        self.used: dict[str, int] = {}
        #: how many of the run's tasks fail each set of tests: ``pick`` prefers a target
        #: whose tests fail in none (a new symptom)
        self.failing: Mapping[frozenset[str], int] = {}
        self._wheels: dict[tuple[str, str], str | None] = {}

    def submodules(self) -> list[Submodule]:
        """Submodules of installed distributions that sampled tests import, with a wheel:
        the ones only some tests import (``package_files.submodules``), and the others
        every test reaches (a package's ``__init__`` imports them) — ``pick`` prefers the
        narrow ones."""
        if self._subs is None:
            self._subs = []
            narrow = {path: (module, dist, touching)
                      for module, path, dist, touching in submodules(self.probe, self.tests)}
            rows = [*((m, p, d, t) for p, (m, d, t) in narrow.items()), *self._reached(narrow)]
            for module, path, dist, touching in rows:
                sub = self._submodule(module, path, dist, touching)
                if sub is not None:
                    self._subs.append(sub)
        return self._subs

    def _reached(self, narrow: dict) -> list[tuple]:
        """Modules of non-tooling distributions' packages the sampled tests import that are
        not narrow ones — a package's ``__init__`` too, the only module a one-file package
        has: (module, path, distribution, touching tests)."""
        files = installed_files(self.probe)
        imported = {t: set(self.probe.of(t).modules) for t in self.tests}
        rows = []
        for module, path in sorted(self.probe.modules.items()):
            dist = files.get(path)
            if dist is None or path in narrow or not path.endswith(".py"):
                continue
            stem = f"{self.site}/{module.replace('.', '/')}"
            if path not in (f"{stem}.py", f"{stem}/__init__.py") or path == f"{stem}.py" and "." not in module:
                continue  # not where the module's name puts it, or a top-level module of its own
            touching = [t for t in self.tests if module in imported[t]]
            if touching:
                rows.append((module, path, dist, touching))
        return rows

    def _submodule(self, module, path, dist, touching) -> Submodule | None:
        if not touching or not dist.path:
            return None
        package = f"{self.site}/{module.split('.', 1)[0]}"
        entry = self.probe.files.get(package)
        if entry is None or entry.type != "d" or not path.startswith(package + "/"):
            return None
        if (dist.name, dist.version) not in self._wheels:  # one scan of the listing per distribution
            self._wheels[(dist.name, dist.version)] = wheel_for(self.probe, dist.name, dist.version)
        wheel = self._wheels[(dist.name, dist.version)]
        if not wheel:
            return None
        line = reinstall_line(self.probe, dist.name, dist.version, wheel)
        if not line:
            return None
        size = self.probe.files[path].size if path in self.probe.files else 0
        return Submodule(module=module, path=path, dist=dist.name, version=dist.version, dist_info=dist.path,
                         package=package, size=size, reinstall=line, wheel=wheel, touching=touching)

    def pick(self, rng: random.Random, need_size: int = 0) -> Submodule | None:
        """A submodule, drawn by what it would fail (``spread_draw``)."""
        pool = [s for s in self.submodules() if s.size >= need_size and s.path not in self.avoid]
        if not pool:
            return None
        return spread_draw(rng, pool, [(s.path, frozenset(s.touching)) for s in pool], self.used, self.failing)

    def exists(self, path: str) -> bool:
        return path in self.probe.files

    def apport_hook(self) -> str | None:
        """The crash reporter's hook module that Debian's ``sitecustomize`` imports (and
        calls ``install()`` of) at every interpreter start when it exists; None when this
        ``sitecustomize`` does not, or the hook is there already."""
        custom = self.files.read(self.probe.realpath(f"{self.stdlib}/sitecustomize.py")) or b""
        hook = f"{self.stdlib}/apport_python_hook.py"
        return hook if b"apport_python_hook" in custom and not self.exists(hook) else None


#: The sweeper's habits (``harness/scripts/sweeper.sh``), each a step an admin takes on a
#: broken Python machine without reading the task; a scenario names those it resists.
HABITS = {
    "executables": "make every interpreter and program of the venv executable",
    "loader": "drop /etc/ld.so.preload, rebuild the loader's cache",
    "bytecode": "delete all bytecode",
    "stdlib_names": "delete modules in the working directory named like the standard library's",
    "clean_environment": "run pip and python isolated: PYTHON*, PIP_* and LD_* unset, python -I",
    "pip_config_ignored": "reinstall with pip's configuration ignored, from the local wheelhouses only",
    "venv_recreated": "recreate the venv and reinstall every local wheel",
    "system_data": "refresh certificates and locales, relink a dangling time zone",
}


class Scenario:
    """One class of incident. ``plan`` gives None when the site offers no fitting target."""

    name: ClassVar[str]
    #: the class of real incident it is modelled on (one line; the docstring tells more)
    incident: ClassVar[str]
    #: its mechanism, shared with the scenarios that break or block the same way (a mix
    #: keeps no family above its share of a run's tasks)
    family: ClassVar[str]
    #: the sweeper's habits (``HABITS``) that do not undo it, or leave the state it judges
    resists: ClassVar[tuple[str, ...]] = tuple(HABITS)
    #: whether its mechanism leaves an injected path where a reader of the failing output or
    #: of ``env`` sees it (a shadow copy in the traceback's frames, a truncated module's
    #: SyntaxError, a folder in an ``ENV`` line); measured per task all the same
    shows_cause: ClassVar[bool] = False

    @property
    def resists_sweeper(self) -> bool:
        """Whether the whole task-blind sweeper is meant to fail on it: no habit undoes it."""
        return set(HABITS) <= set(self.resists)

    def plan(self, site: Site, rng: random.Random) -> Plan | None:
        raise NotImplementedError


REGISTRY: dict[str, Scenario] = {}


def register(cls: type[Scenario]) -> type[Scenario]:
    if cls.name in REGISTRY:
        raise ValueError(f"scenario {cls.name} is registered twice")
    REGISTRY[cls.name] = cls()
    return cls


# ---- changes shared by scenarios ---------------------------------------------------------------

#: The share of blocked-reinstall scenarios that delete one function of a module, not the module.
NARROW_SHARE = 0.75
REINSTALL_OFFLINE = "Reinstall {dist}=={version} from the wheel in the image's local wheelhouse (no network needed)."


def damaged(sub: Submodule, name: str, run: str, symptom: str, hint: str, shows: list[str]) -> PlannedChange:
    """A change to the submodule's installed file (``run``, which drops its bytecode too)
    that reinstalling its distribution from the image's wheelhouse undoes."""
    return PlannedChange(name=name, category="package_files", dockerfile=[f"RUN {run}"],
                         repair=[sub.reinstall], places=[sub.path], symptom=symptom, hint=hint,
                         offline=REINSTALL_OFFLINE.format(dist=sub.dist, version=sub.version), shows=shows)


def module_gone(sub: Submodule) -> PlannedChange:
    """The submodule's file deleted, with its bytecode (the repair reinstalls the distribution)."""
    return damaged(sub, "module_removed", f"rm -f {q(sub.path)} {pycache_glob(sub.path)}",
                   f"Tests reaching {sub.module} fail with ModuleNotFoundError although {sub.dist} imports.",
                   f"Whether every installed file of {sub.dist} is there.",
                   [r"ModuleNotFoundError", r"No module named", r"cannot import name"])


def _import_time_names(tree: ast.Module) -> set[str]:
    """Every name, attribute and string the module's import evaluates: its top-level
    statements, class bodies, decorators, base classes and default values — not the bodies
    of functions and methods, which run only when called."""
    names: set[str] = set()

    def collect(node: ast.AST) -> None:
        for x in ast.walk(node):
            if isinstance(x, ast.Name):
                names.add(x.id)
            elif isinstance(x, ast.Attribute):
                names.add(x.attr)
            elif isinstance(x, ast.Constant) and isinstance(x.value, str):
                names.add(x.value)

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for part in [*node.decorator_list, *node.args.defaults, *filter(None, node.args.kw_defaults)]:
                collect(part)
        elif isinstance(node, ast.ClassDef):
            for part in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
                collect(part)
            for child in node.body:
                visit(child)
        else:
            collect(node)

    for node in tree.body:
        visit(node)
    return names


def removable_functions(source: bytes, init: bytes) -> list[tuple[str, int, int]]:
    """The functions and methods of a module that its import does not need: named nowhere
    the import evaluates (``__all__``, a decorator, a class body, a default value) nor in
    its package's ``__init__``, not a dunder, not a class's only statement — so deleting
    one breaks only the code that calls it, when it calls it. (qualified name, first
    line, last line) each."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    needed = _import_time_names(tree)
    init_text = init.decode("utf-8", "replace")
    found = []
    owners = [(None, tree.body), *((c.name, c.body) for c in tree.body if isinstance(c, ast.ClassDef))]
    for owner, body in owners:
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("__"):
                continue
            if node.name in needed or re.search(rf"\b{re.escape(node.name)}\b", init_text) or len(body) < 2:
                continue
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            found.append((f"{owner}.{node.name}" if owner else node.name, first, node.end_lineno or node.lineno))
    return found


def function_gone(sub: Submodule, files: GoldFiles, rng: random.Random) -> PlannedChange | None:
    """One function or method deleted from the submodule (an older revision of the file,
    from before it was added): only the code that calls it fails, when it calls it, and the
    error names the function, not the file. None when the module offers none."""
    source = files.read(sub.path) or b""
    init = f"{sub.package}/__init__.py"  # the package's __init__ names what it re-exports; its own import is `needed`
    found = removable_functions(source, b"" if sub.path == init else files.read(init) or b"")
    if not found:
        return None
    text = source.decode("utf-8", "replace")
    # one referred to elsewhere in the module (a helper its other code calls) is likelier used
    weights = [len(re.findall(rf"\b{re.escape(n.rsplit('.', 1)[-1])}\b", text)) for n, _, _ in found]
    name, first, last = rng.choices(found, weights=weights)[0]
    return damaged(sub, "function_removed", f"sed -i '{first},{last}d' {q(sub.path)} && rm -f {pycache_glob(sub.path)}",
                   f"Code calling {name} of {sub.module} fails: {sub.dist} seems to lack it.",
                   f"Whether the installed files of {sub.dist} are those of its release.",
                   [r"has no attribute", r"cannot import name", r"NameError", r"is not defined"])


def missing_code(site: Site, sub: Submodule, rng: random.Random) -> PlannedChange:
    """The fault of a scenario over ``sub``: usually (``NARROW_SHARE``, while the site
    allows it) one function or method of it deleted, which fails only the tests that call
    it; else, or when the module offers none, the whole module deleted, which fails every
    test whose imports reach it (all of them where a package's ``__init__`` imports it)."""
    if site.narrow and rng.random() < NARROW_SHARE:
        narrow = function_gone(sub, site.files, rng)
        if narrow is not None:
            return narrow
    return module_gone(sub)


def module_cut(sub: Submodule) -> PlannedChange:
    """The submodule's file cut short mid-write (its bytecode dropped)."""
    return damaged(sub, "module_truncated",
                   f"truncate -s {kept_prefix(sub.size)} {q(sub.path)} && rm -f {pycache_glob(sub.path)}",
                   f"Tests reaching {sub.module} fail while importing it (a syntax error or a missing name).",
                   f"Whether the installed files of {sub.dist} are intact.",
                   [r"SyntaxError", r"IndentationError", r"cannot import name", r"ImportError", r"EOF"])


def record_gone(sub: Submodule) -> PlannedChange:
    """A blocker: the distribution's RECORD deleted, so pip refuses to uninstall (and so to
    reinstall) it; the repair removes the stale metadata folder so pip installs afresh."""
    record = f"{sub.dist_info}/RECORD"
    return PlannedChange(
        name="record_missing", category="package_metadata", role="blocker",
        dockerfile=[f"RUN rm -f {q(record)}"], repair=[f"rm -rf {q(sub.dist_info)}"], places=[record],
        symptom=f"pip cannot uninstall {sub.dist}: its RECORD file is not found.",
        hint=f"The installation metadata pip keeps for {sub.dist}.",
        offline="Remove the distribution's metadata folder, then install it again from the local wheelhouse.")


def shadow_copy(sub: Submodule, folder: str, cut: bool) -> list[str]:
    """Shell for a RUN line: a copy of the submodule's top-level package in ``folder``, with
    the submodule cut short (``cut``) or missing, and no bytecode."""
    copy = f"{folder}/{sub.top}"
    broken = f"{copy}/{sub.inner}"
    hurt = f"truncate -s {kept_prefix(sub.size)} {q(broken)}" if cut else f"rm -f {q(broken)}"
    return [f"mkdir -p {q(folder)}", f"cp -a {q(sub.package)} {q(copy)}", hurt,
            f"find {q(copy)} -name __pycache__ -type d -prune -exec rm -rf {{}} +"]
