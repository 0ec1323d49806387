"""Operators: bytecode (compiled .pyc files that no longer match their sources)."""

from __future__ import annotations

import ast

from cligym.invert.operators.base import GoldFiles, Operator, register
from cligym.invert.operators.dependencies import REINSTALL, WheelData, owner, wheel_data
from cligym.invert.operators.probing import (
    TEST_FILE,
    narrow_first,
    project_root,
    site_packages,
    tooling_tops,
    under,
)
from cligym.invert.operators.targets import Target, q, run_python

CATEGORY = "bytecode"

# Compiles SOURCE (the module plus a trailing `del NAME`) to CFILE as if it were PATH.
COMPILE = """\
import sys
sys.dont_write_bytecode = True
import os, py_compile, tempfile
path, cfile, mode = {path!r}, {cfile!r}, {mode!r}
with open(path, 'rb') as handle:
    source = handle.read() + b'\\n\\ndel {name}\\n'
fd, scratch = tempfile.mkstemp(suffix='.py')
try:
    os.write(fd, source)
    os.close(fd)
    os.makedirs(os.path.dirname(cfile), exist_ok=True)
    py_compile.compile(scratch, cfile=cfile, dfile=path, doraise=True,
                       invalidation_mode=getattr(py_compile.PycInvalidationMode, mode))
    os.chmod(cfile, 0o644)
finally:
    os.remove(scratch)
"""


def cache_path(path: str, tag: str) -> str:
    """importlib.util.cache_from_source(path) for the interpreter whose cache tag is ``tag``."""
    folder, _, file = path.rpartition("/")
    return f"{folder}/__pycache__/{file[:-3]}.{tag}.pyc"


def imported_modules(probe, tests: list[str]) -> list[tuple[str, str, str, list[str]]]:
    """Python source modules of the project and its dependencies that tests import:
    (path, module, mode, touching tests)."""
    site = site_packages(probe)
    root = project_root(probe)
    tooling = tooling_tops(probe)
    found = []
    for module, path in probe.modules.items():
        top = module.split(".")[0]
        if top in tooling or not path.endswith(".py") or TEST_FILE.search(path):
            continue
        if not (under(path, root) or under(path, site)) or probe.files.get(path) is None:
            continue
        touching = probe.touching(tests, "modules", module)
        found.append((path, module, probe.files[path].mode, touching))
    return found


def public_name(source: bytes) -> str | None:
    """A public top-level name of a module: the first in __all__ if it has one, else its
    first public function or class."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    defined, bound, exported = [], set(), []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.append(node.name)
        elif isinstance(node, ast.ImportFrom):
            bound |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Assign):
            bound |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets) and \
                    isinstance(node.value, (ast.List, ast.Tuple)):
                exported = [e.value for e in node.value.elts
                            if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    names = [n for n in exported if n in bound or n in defined] or defined
    names = [n for n in names if not n.startswith("_") and n.isidentifier()]
    return names[0] if names else None


class StalePycData(WheelData):
    tag: str  # the interpreter's cache tag (cpython-311)
    deleted: str = ""  # the public name the stale bytecode lacks


class _StalePyc(Operator):
    """Bytecode of an imported module compiled from its source minus one public name."""

    Data = StalePycData

    def applies_to(self, probe, tests):
        tag = "cpython-" + probe.python.get("version", "3.11").replace(".", "")
        return narrow_first([
            self.target(path=path, name=module, touching=touching, tag=tag,
                        **wheel_data(probe, owner(probe, path)))
            for path, module, _, touching in imported_modules(probe, tests)
        ])

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        name = public_name(gold.read(target.path) or b"")
        return None if name is None else target.with_data(deleted=name)


@register
class StalePycUnchecked(_StalePyc):
    """A module whose source was edited after it was compiled with unchecked-hash
    invalidation (as reproducible distribution builds do): Python keeps running the old
    bytecode."""

    name = "stale_pyc_unchecked"
    symptom = "ImportError or NameError for {deleted} from {name}, although the source file plainly defines it."
    hint = "What Python actually executes when it imports {name}, and when it re-reads the source."
    shows = (r"cannot import name", r"NameError", r"has no attribute")
    offline = "Delete the stale bytecode of {name}; Python compiles the source again."
    # The verifier runs the tests with a fresh bytecode cache of its own (no __pycache__ of
    # the image is read: planted bytecode must not decide a verdict), so with nothing done
    # such a state scores 1 (measured: every attempt discarded as trivial). Named-only.
    default = False

    def applies_to(self, probe, tests):
        # not a module of the checkout: the verifier restores the project tree as gold had
        # it, bytecode caches included, so such a state scored 1 with nothing done (h11)
        return [t for t in super().applies_to(probe, tests) if not under(t.path, probe.workdir)]

    def apply(self, target):
        cfile = cache_path(target.path, target.data.tag)
        code = COMPILE.format(path=target.path, cfile=cfile, mode="UNCHECKED_HASH", name=target.data.deleted)
        return [run_python(code)]

    def solution(self, target):
        return [f"rm -f {q(cache_path(target.path, target.data.tag))}"]


@register
class SourcelessPycStale(_StalePyc):
    """An image-slimming step that deleted ``.py`` sources and kept bytecode, which was
    compiled from an older checkout of the module."""

    name = "sourceless_pyc_stale"
    symptom = ("ImportError ('cannot import name') or AttributeError ('has no attribute') for {deleted} from "
               "{name}; tracebacks show no source lines for it.")
    hint = "Which file Python loads for the module {name}."
    shows = (r"cannot import name", r"has no attribute")
    offline = "Delete the stale bytecode of {name}, then " + REINSTALL[0].lower() + REINSTALL[1:]

    def applies_to(self, probe, tests):
        # the source comes back from its distribution's wheel: none for a file of the checkout
        return [t for t in super().applies_to(probe, tests) if t.data.reinstall]

    def prepare(self, target, gold):
        return super().prepare(target, gold) if target.data.reinstall else None

    def apply(self, target):
        legacy = target.path + "c"
        code = COMPILE.format(path=target.path, cfile=legacy, mode="TIMESTAMP", name=target.data.deleted)
        return [run_python(code + f"os.remove({target.path!r})\n")]

    def solution(self, target):
        return [f"rm -f {q(target.path + 'c')}", target.data.reinstall]
