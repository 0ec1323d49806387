"""Operators: import_system (how Python finds and loads modules)."""

from __future__ import annotations

import re

from cligym.invert.operators.base import Operator, register
from cligym.invert.operators.dependencies import Reinstall, owner, wheel_data
from cligym.invert.operators.probing import (
    module_kind,
    project_root,
    site_packages,
    touched_tops,
)
from cligym.invert.operators.targets import TargetData, pycache_glob, q, write_file_line

CATEGORY = "import_system"


@register
class CwdShadowModule(Operator):
    """A developer's scratch file in the project directory named like a module it tries out
    (the classic ``random.py`` beside the code): it shadows the real module."""

    name = "cwd_shadow_module"
    symptom = ("Tests that use the module {name} fail with ImportError ('cannot import name') or AttributeError "
               "('has no attribute'): it lacks functions and classes it normally has.")
    hint = "Which file Python actually imports for a module name, given the directory the tests start in."
    shows = (r"cannot import name", r"has no attribute", r"partially initialized module")
    offline = "Delete the stray {name}.py in the directory the tests start in."

    def applies_to(self, probe, tests):
        cwd = probe.env.get("PWD") or project_root(probe)
        targets = []
        for mod, touching in touched_tops(probe, tests, ("stdlib", "dep")):
            path = f"{cwd}/{mod}.py"
            if path not in probe.files and f"{cwd}/{mod}" not in probe.files:
                targets.append(self.target(path=path, name=mod, touching=touching))
        return targets

    def apply(self, target):
        text = f'"""Scratch: trying out {target.name} before wiring it in."""\n'
        return [f"RUN {write_file_line(target.path, text.encode())}"]

    def solution(self, target):
        return [f"rm -f {q(target.path)} {pycache_glob(target.path)}"]


class VendorData(TargetData):
    dir: str  # the directory the .pth file puts first on sys.path


@register
class PthShadowPath(Operator):
    """A vendoring experiment left behind: a ``.pth`` file that puts a vendor directory first
    on ``sys.path``, holding a placeholder package named like an installed one."""

    name = "pth_shadow_path"
    symptom = ("Importing {name} gives a package without its usual contents (ImportError 'cannot import name', "
               "AttributeError 'has no attribute'), although it is installed.")
    hint = "What runs at interpreter start-up from site-packages, and the order of the module search path."
    shows = (r"cannot import name", r"has no attribute")
    offline = "Delete the .pth file that puts the vendor directory first on sys.path, and that directory."

    DIR = "/usr/local/lib/python-vendor"
    Data = VendorData

    def applies_to(self, probe, tests):
        if self.DIR in probe.files:
            return []
        site = site_packages(probe)
        return [
            self.target(path=f"{site}/00-vendor.pth", name=mod, touching=touching, dir=self.DIR)
            for mod, touching in touched_tops(probe, tests, ("dep",))
        ]

    def apply(self, target):
        folder = target.data.dir
        pth = f"import sys; sys.path.insert(0, {folder!r})\n".encode()
        stub = f'"""Vendored {target.name} (placeholder)."""\n'.encode()
        return [(f"RUN {write_file_line(f'{folder}/{target.name}/__init__.py', stub)} && "
                f"{write_file_line(target.path, pth)}")]

    def solution(self, target):
        return [f"rm -f {q(target.path)}", f"rm -rf {q(target.data.dir)}"]


BLOCKER = '''import sys


class _Policy:
    """Refuses imports that the deployment policy does not allow."""

    denied = ({module!r},)

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.denied:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Policy())
'''


class SiteData(TargetData):
    site: str  # the site-packages directory the hook is installed in


@register
class ImportBlocker(Operator):
    """A start-up hook that refuses imports of one module, as a "deployment policy" would.
    Contrived (no real machine ships one): named-only."""

    name = "import_blocker"
    symptom = "Tests fail with \"No module named '{name}'\" although the module is present on disk."
    hint = "Import hooks installed at interpreter start-up (the finders Python consults on import)."
    shows = (r"No module named",)
    offline = "Delete the start-up hook (a .pth file and the module it imports) from site-packages."
    default = False
    Data = SiteData

    def applies_to(self, probe, tests):
        site = site_packages(probe)
        if f"{site}/_import_policy.py" in probe.files:
            return []
        return [
            self.target(name=mod, touching=touching, site=site)
            for mod, touching in touched_tops(probe, tests, ("stdlib", "dep"))
        ]

    def apply(self, target):
        site = target.data.site
        module = BLOCKER.format(module=target.name).encode()
        return [(f"RUN {write_file_line(f'{site}/_import_policy.py', module)} && "
                f"{write_file_line(f'{site}/import_policy.pth', b'import _import_policy' + bytes([10]))}")]

    def solution(self, target):
        site = target.data.site
        return [f"rm -f {q(site + '/import_policy.pth')} {q(site + '/_import_policy.py')}",
                f"rm -rf {q(site + '/__pycache__')}/_import_policy.*"]


@register
class InitPyRemoved(Reinstall):
    """A cleanup that deleted ``__init__.py`` files it took for empty boilerplate: the
    package directory still imports (as a namespace package) but defines nothing."""

    name = "init_py_removed"
    symptom = ("Tests importing {name} fail with ImportError ('cannot import name') or AttributeError "
               "('has no attribute'): names the package should define are missing.")
    hint = "How Python decides what a package directory provides when it is imported."
    shows = (r"cannot import name", r"has no attribute", r"No module named")
    MIN_SIZE = 64

    def applies_to(self, probe, tests):
        targets = []
        for mod, path in sorted(probe.modules.items()):
            kind = module_kind(probe, mod)
            entry = probe.files.get(path)
            if not path.endswith("/__init__.py") or entry is None or entry.size < self.MIN_SIZE:
                continue
            if kind == "dep" and "." not in mod or kind not in ("dep", "project"):
                continue
            if mod.split(".")[-1].startswith("test"):
                continue
            touching = probe.touching(tests, "modules", mod)
            wheel = wheel_data(probe, owner(probe, path))
            if touching and wheel.get("reinstall"):  # a file of the checkout has no copy in the image
                targets.append(self.target(path=path, name=mod, touching=touching, **wheel))
        return sorted(targets, key=lambda t: (len(t.touching), t.name))

    def inspect(self, target, gold):
        raw = gold.read(target.path) or b""
        return target if re.search(rb"^(from|import|def|class|\w+\s*=)", raw, re.MULTILINE) else None

    def apply(self, target):
        return [f"RUN rm -f {q(target.path)} {pycache_glob(target.path)}"]
