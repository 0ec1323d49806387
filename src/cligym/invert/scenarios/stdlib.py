"""Scenario: stale backports of a standard-library module, found before the real one.

It needs nothing of the project but a standard-library module its code imports, so it
fits the projects the other scenarios cannot reach: a flat project whose tests import it
from its working tree, with no dependency beyond the test tooling.
"""

from __future__ import annotations

import ast
import random

from cligym.invert.operators.package_files import installed_files
from cligym.invert.operators.targets import q, write_file_line
from cligym.invert.scenarios.base import Plan, PlannedChange, Scenario, Site, register, removable_functions
from cligym.invert.scenarios.shadows import HOOK

#: Modules the interpreter has imported before ``sitecustomize`` runs: a folder the hook
#: puts first comes too late for them (``python -X importtime -c pass``, and the hook's own).
STARTUP = frozenset({
    "abc", "codecs", "encodings", "genericpath", "io", "os", "posixpath", "site", "stat", "sitecustomize",
    "_collections_abc", "_sitebuiltins", "_distutils_hack", "apport_python_hook", "sys",
})
#: The folders of the two backports: the crash reporter's, and a pip-installed backport's.
HOOK_FOLDER = "/usr/share/apport/python"
PTH_FOLDER = "/usr/local/lib/python3-backports"
PTH_LINE = "import sys; sys.path.insert(0, {folder!r})\n"
SHOWS = [r"NameError", r"is not defined", r"has no attribute", r"cannot import name"]


@register
class StdlibBackportTwice(Scenario):
    """An old backport of a standard-library module (from before one of its helpers
    existed) twice ahead of the real one: Debian's ``sitecustomize`` imports a crash
    reporter's ``apport_python_hook``, whose ``install()`` puts the reporter's folder first
    on ``sys.path``, and a backport package's ``.pth`` line in the venv does the same for
    another copy. Removing the first copy reveals the second, which fails the same way."""

    name = "stdlib_backport_twice"
    family = "stdlib_shadow"
    incident = "two stale backports of a standard-library module put ahead of it: a distro hook's and a .pth line's"
    shows_cause = True  # the copy's path is in the traceback's frames

    def plan(self, site: Site, rng: random.Random) -> Plan | None:
        hook, pth = site.apport_hook(), f"{site.site}/backports-compat.pth"
        if hook is None or site.exists(pth):
            return None
        found = [(module, path, functions) for module, path in imported_stdlib(site)
                 if (functions := removable_functions(site.files.read(path) or b"", b""))]
        if not found:
            return None
        module, path, functions = rng.choices(found, weights=[len(f) for _, _, f in found])[0]
        name, first, last = rng.choice(functions)
        package = path.endswith("/__init__.py")
        top = module.split(".")[0]

        def backport(kind: str, folder: str, hook: str, line: str, offline: str) -> PlannedChange:
            """The old copy in ``folder`` (the helper's lines gone), and ``hook`` putting it first."""
            source, target = (path.rsplit("/", 1)[0], f"{folder}/{top}") if package else (path, f"{folder}/{top}.py")
            inside = f"{target}/__init__.py" if package else target
            run = (f"RUN mkdir -p {q(folder)} && cp -a {q(source)} {q(target)} && sed -i '{first},{last}d' {q(inside)}"
                   f" && find {q(folder)} -name __pycache__ -prune -exec rm -rf {{}} +"
                   f" && {write_file_line(hook, line.format(folder=folder).encode(), '644')}")
            return PlannedChange(
                name=f"stdlib_backport_{kind}", category="import_system", dockerfile=[run],
                repair=[f"rm -rf {q(hook)} {q(folder)}"], places=[hook, folder, inside], symptom=symptom,
                hint=f"Where Python finds the standard library's {module}.", offline=offline, shows=SHOWS)

        symptom = f"Code calling into {module} fails ({name} is not defined), though the standard library has it."
        by_hook = backport("hook", HOOK_FOLDER, hook, HOOK,
                           "Delete the hook module from the standard library's folder and the folder it adds.")
        by_pth = backport("pth", PTH_FOLDER, pth, PTH_LINE,
                          "Delete the .pth line's file from site-packages and the folder it adds.")
        return Plan(scenario=self.name, changes=[by_pth, by_hook], repair_order=[1, 0], touching=list(site.tests))


def imported_stdlib(site: Site) -> list[tuple[str, str]]:
    """Pure-Python standard-library modules the project's own code imports (module, file),
    but those imported before ``sitecustomize`` runs."""
    names: set[str] = set()
    installed = installed_files(site.probe)  # non-tooling distributions' files
    project = [p for p in site.probe.modules.values() if p.endswith(".py") and _projects(site, p, installed)]
    for path in project:
        try:
            tree = ast.parse(site.files.read(path) or b"")
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
    found = []
    for module in sorted(names):
        path = site.probe.modules.get(module, "")
        if module.split(".")[0] in STARTUP or "." in module or not path.startswith(site.stdlib + "/"):
            continue
        if path.endswith(".py") and "-packages/" not in path:
            found.append((module, path))
    return found


def _projects(site: Site, path: str, installed: dict) -> bool:
    """Whether a module file is the project's or a dependency's: under its working tree (not
    a test), or installed by a distribution outside the test tooling."""
    if path.startswith(site.probe.workdir.rstrip("/") + "/"):
        name = path.rsplit("/", 1)[-1]
        return not (name.startswith("test") or "/tests/" in path or name == "conftest.py")
    return path in installed
