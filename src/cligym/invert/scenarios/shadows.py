"""Scenarios: an old copy of a package found before the installed one, over a real hole.

Each one puts a copy of an installed top-level package where Python looks first — a
legacy egg, a distro hook's folder, the working directory, a stale ``PYTHONPATH``, the
interpreter's own zip entry — with one submodule missing in the copy (an old copy, made
before that module existed; now and then one cut short mid-copy, ``CUT_SHARE``), and
deletes that submodule from the installed distribution too. The failing tests name a
module, not where it came from; reinstalling the distribution (the obvious repair) changes
nothing while the copy is first; removing the copy alone reveals the real hole. Both
repairs are needed, which leave-one-repair-out checks.
"""

from __future__ import annotations

import random

from cligym.invert.operators.targets import q, write_file_line
from cligym.invert.scenarios.base import (
    Plan,
    PlannedChange,
    Scenario,
    Site,
    Submodule,
    module_gone,
    register,
    shadow_copy,
)

#: The share of copies whose submodule is cut short rather than missing. A cut module's
#: SyntaxError prints the copy's path; a missing one only the module's name.
CUT_SHARE = 0.2

SHOWS = [r"ModuleNotFoundError", r"No module named", r"cannot import name", r"SyntaxError", r"ImportError"]


class _Shadowed(Scenario):
    """A shadow copy (``shadow``) over the submodule deleted from the installed package."""

    family = "import_shadow"
    shows_cause = True  # the copy's files are in the traceback's frames when its __init__ runs

    def shadow(self, site: Site, sub: Submodule, cut: bool) -> PlannedChange | None:
        raise NotImplementedError

    def plan(self, site: Site, rng: random.Random) -> Plan | None:
        sub = site.pick(rng, need_size=64)
        if sub is None:
            return None
        shadow = self.shadow(site, sub, cut=rng.random() < CUT_SHARE)
        if shadow is None:
            return None
        return Plan(scenario=self.name, changes=[shadow, module_gone(sub)], repair_order=[0, 1], touching=sub.touching)


def _change(name: str, category: str, run: list[str], repair: list[str], places: list[str], sub: Submodule,
            where: str, offline: str) -> PlannedChange:
    return PlannedChange(
        name=name, category=category, dockerfile=[f"RUN {' && '.join(run)}"], repair=repair, places=places,
        symptom=f"Tests reaching {sub.module} fail to import it, and reinstalling {sub.dist} does not help.",
        hint=f"Where Python finds the package {sub.top} ({where}).", offline=offline, shows=SHOWS)


#: The lines setuptools' easy_install wrote to put eggs ahead of site-packages.
EGG_INSERT = ("import sys; sys.__plen = len(sys.path)",
              "import sys; new = sys.path[sys.__plen:]; del sys.path[sys.__plen:]; "
              "p = getattr(sys, '__egginsert', 0); sys.path[p:p] = new; sys.__egginsert = p + len(new)")


@register
class LegacyEggAhead(_Shadowed):
    """A legacy egg left by an old ``setup.py develop``/``easy_install`` and put ahead of
    site-packages by its ``easy-install.pth`` (the setuptools egg-insert lines), from the
    days before wheels; the distribution's real install is missing a submodule too."""

    name = "legacy_egg_ahead"
    resists = ("executables", "loader", "bytecode", "stdlib_names", "clean_environment", "pip_config_ignored",
               "system_data")
    incident = "a legacy egg put ahead of site-packages by easy-install.pth, over a missing submodule"

    def shadow(self, site, sub, cut):
        pth = f"{site.site}/easy-install.pth"
        if site.exists(pth):
            return None
        version = site.probe.python.get("version", "3")
        egg = f"{site.site}/{sub.dist.replace('-', '_')}-{sub.version}-py{version}.egg"
        content = "\n".join([EGG_INSERT[0], "./" + egg.rsplit("/", 1)[1], EGG_INSERT[1]]) + "\n"
        run = [*shadow_copy(sub, egg, cut), write_file_line(pth, content.encode(), "644")]
        return _change("legacy_egg", "import_system", run, [f"rm -rf {q(egg)} {q(pth)}"], [egg, pth], sub,
                       "eggs and .pth files in site-packages",
                       "Delete the stale egg and its easy-install.pth; the installed distribution stays.")


HOOK = '''\
# compatibility hook of a crash-reporter backport: makes its helper modules importable
import sys


def install():
    sys.path.insert(0, {folder!r})
'''


@register
class DistroHookShadow(_Shadowed):
    """Debian's own ``sitecustomize`` imports ``apport_python_hook`` when it exists; a
    backported crash reporter installed one into the standard library's folder, and its
    ``install()`` puts the reporter's folder — holding an old copy of a package — first on
    ``sys.path`` for every Python process, virtual environments included."""

    name = "distro_hook_shadow"
    incident = "a distro import hook (Debian's sitecustomize) that puts a stale folder first on sys.path"

    def shadow(self, site, sub, cut):
        hook = site.apport_hook()
        if hook is None:
            return None
        folder = "/usr/share/apport/python"
        run = [*shadow_copy(sub, folder, cut), write_file_line(hook, HOOK.format(folder=folder).encode(), "644")]
        return _change("distro_hook", "import_system", run, [f"rm -rf {q(hook)} {q(folder)}"], [hook, folder], sub,
                       "start-up hooks of the system's Python",
                       "Delete the hook module from the standard library's folder and the folder it adds.")


@register
class VendoredCopyInWorkdir(_Shadowed):
    """A build step that vendored a dependency into the project's working directory (a
    ``pip install --target .`` or an unpacked sdist) and was never cleaned up: the
    working directory comes first on ``sys.path`` when the tests run."""

    name = "vendored_copy_in_workdir"
    incident = "a vendored copy of a package left in the working directory, over a missing submodule"

    def shadow(self, site, sub, cut):
        workdir = site.probe.workdir
        copy = f"{workdir}/{sub.top}"
        if site.exists(copy) or site.exists(copy + ".py") or workdir not in site.probe.python.get("path", []):
            return None
        return _change("vendored_copy", "import_system", shadow_copy(sub, workdir, cut), [f"rm -rf {q(copy)}"],
                       [copy], sub, "the working directory and the folders before site-packages",
                       "Delete the vendored copy from the working directory.")


@register
class LegacyPythonpath(_Shadowed):
    """A deployment image that once shipped its packages in a folder named by
    ``PYTHONPATH``; the variable stayed in the image after the move to a virtual
    environment, and so did an old copy of one package."""

    name = "legacy_pythonpath"
    incident = "a stale PYTHONPATH from an earlier deployment layout, with an old package copy behind it"

    def shadow(self, site, sub, cut):
        if site.probe.env.get("PYTHONPATH"):
            return None
        folder = "/opt/app/lib/python"
        change = _change("legacy_pythonpath", "environment_variables", shadow_copy(sub, folder, cut),
                         [f"rm -rf {q(folder + '/' + sub.top)}"], [folder, f"{folder}/{sub.top}"], sub,
                         "the environment's module search path",
                         "Empty the folder PYTHONPATH names (the variable itself is set by the image).")
        change.dockerfile.append(f"ENV PYTHONPATH={folder}")
        return change


@register
class ZipOverlay(_Shadowed):
    """An embedded-distribution archive dropped at the interpreter's own zip path
    (``pythonXY.zip``, which ``sys.path`` lists before the standard library even when it
    does not exist), holding an old copy of a package."""

    name = "zip_overlay"
    incident = "an archive at the interpreter's built-in pythonXY.zip path shadowing an installed package"

    def shadow(self, site, sub, cut):
        archive = next((p for p in site.probe.python.get("path", []) if p.endswith(".zip")), "")
        if not archive or site.exists(archive):
            return None
        scratch = "/tmp/.embedded"
        run = [*shadow_copy(sub, scratch, cut), f"cd {scratch}",
               f"/usr/bin/python3 -m zipfile -c {q(archive)} {q(sub.top)}", "cd /", f"rm -rf {scratch}"]
        return _change("zip_overlay", "import_system", run, [f"rm -f {q(archive)}"], [archive], sub,
                       "the entries of sys.path before the standard library",
                       "Delete the archive at the interpreter's zip path.")
