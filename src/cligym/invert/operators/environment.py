"""Operators: environment_variables (image ENV that misleads Python or the tests).

An ``ENV`` cannot be undone by a script, so each repair makes the variable's value
harmless on the filesystem.
"""

from __future__ import annotations

from cligym.invert.operators.base import Operator, register
from cligym.invert.operators.probing import own_items, touched_tops
from cligym.invert.operators.targets import TargetData, q, write_file_line

CATEGORY = "environment_variables"


class DirData(TargetData):
    dir: str  # the directory the variable adds, which the repair removes


@register
class EnvPythonpathShadow(Operator):
    """A site-local directory added to ``PYTHONPATH`` for some tweak, holding a placeholder
    module named like a real one: it shadows the real module."""

    name = "env_pythonpath_shadow"
    symptom = ("Tests using {name} fail with ImportError ('cannot import name') or AttributeError "
               "('has no attribute'): the module imports but lacks the functions and classes it should have.")
    hint = "Environment variables that add directories to Python's module search path."
    shows = (r"cannot import name", r"has no attribute", r"partially initialized module")
    offline = "Delete the placeholder module (and its directory) that PYTHONPATH puts before the real {name}."
    order = 80
    Data = DirData

    DIR = "/usr/local/lib/python-site"

    def applies_to(self, probe, tests):
        if self.DIR in probe.files:
            return []
        return [
            self.target(path=f"{self.DIR}/{mod}.py", name=mod, touching=touching, dir=self.DIR)
            for mod, touching in touched_tops(probe, tests, ("stdlib", "dep"))
        ]

    def apply(self, target):
        stub = f'"""Site-local tweaks for {target.name}."""\n'.encode()
        return [f"RUN {write_file_line(target.path, stub)}", f"ENV PYTHONPATH={target.data.dir}"]

    def solution(self, target):
        return [f"rm -rf {q(target.data.dir)}"]


class HomeData(TargetData):
    old: str  # HOME before
    skel: bool  # whether /etc/skel has files a new home directory gets


@register
class EnvHomeMissing(Operator):
    """A user account whose ``HOME`` names a directory that was never created (``useradd``
    without ``-m``)."""

    name = "env_home_missing"
    symptom = "Tests that use the user's home directory fail with \"No such file or directory\"."
    hint = "The environment variable that names the user's home directory, and what it points to."
    shows = (r"No such file or directory", r"FileNotFoundError")
    offline = "Create the home directory that HOME names (from /etc/skel, as useradd -m would)."
    Data = HomeData

    HOMES = ("/home/tester", "/home/ci", "/home/app")

    def applies_to(self, probe, tests):
        home = probe.env.get("HOME", "/root")
        touching = [t for t in tests if "HOME" in own_items(probe, t, "env") or any(
            f.startswith(home.rstrip("/") + "/") for f in own_items(probe, t, "files"))]
        new = next((h for h in self.HOMES if h not in probe.files), None)
        if not touching or new is None:
            return []
        skel = any(path.startswith("/etc/skel/") for path in probe.files)
        return [self.target(path=new, name="HOME", touching=touching, old=home, skel=skel)]

    def apply(self, target):
        return [f"ENV HOME={target.path}"]

    def solution(self, target):
        # a home directory as useradd -m makes it: the skeleton files included
        skel = f" && cp -a /etc/skel/. {q(target.path)}/" if target.data.skel else ""
        return [f"mkdir -p {q(target.path)}{skel}"]


class PythonhomeData(TargetData):
    base: str  # the interpreter's real base prefix


@register
class EnvPythonhomeWrong(Operator):
    """A ``PYTHONHOME`` kept from an image whose Python lived under /opt, after the
    interpreter moved to the system's own."""

    name = "env_pythonhome_wrong"
    symptom = "Python cannot start: it reports that it cannot find its standard library (no module named 'encodings')."
    hint = "Environment variables that tell Python where its own installation lives."
    shows = (r"No module named '?encodings", r"init_fs_encoding", r"PYTHONHOME", r"platform (in)?dependent libraries")
    offline = "Make the Python home that PYTHONHOME names lead to the installed Python (a symlink to {base})."
    broad = True
    order = 90
    Data = PythonhomeData

    def applies_to(self, probe, tests):
        base = probe.python.get("base_prefix", "/usr")
        path = f"/opt/python{probe.python.get('version', '3')}"
        if path in probe.files:
            return []
        return [self.target(path=path, name="PYTHONHOME", touching=list(tests), base=base)]

    def apply(self, target):
        return [f"ENV PYTHONHOME={target.path}"]

    def solution(self, target):
        return [f"mkdir -p {q(target.path.rsplit('/', 1)[0] or '/')} && ln -sfn {q(target.data.base)} {q(target.path)}"]
