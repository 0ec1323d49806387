"""Operators: dynamic_linking (how shared libraries are found and loaded).

Targets are shared objects the tests map (probe Touch.libs): system libraries such as
libz, libssl or libexpat, and extension modules in lib-dynload or site-packages. The C
library, the loader, libm and the other libraries the shell and harness need are never
touched (base.protected).
"""

from __future__ import annotations

import posixpath
import re

from cligym.invert.operators.base import Operator, protected, register
from cligym.invert.operators.dependencies import Reinstall, WheelData, owner, wheel_data
from cligym.invert.operators.probing import narrow_first
from cligym.invert.operators.targets import Target, TargetData, q, write_file_line

CATEGORY = "dynamic_linking"

EXTENSION_DIRS = ("/lib-dynload/", "/site-packages/", "/dist-packages/")
#: Standard-library accelerators whose loss Python silently tolerates (a pure-Python
#: fallback, or importers that catch the ImportError): tried last.
TOLERATED = frozenset({
    "_asyncio", "_bz2", "_lzma", "_uuid", "_decimal", "_json", "_queue", "_heapq", "_bisect", "_pickle",
    "_datetime", "_elementtree", "_zoneinfo", "_typing", "_hashlib", "_statistics", "readline",
})
VERSIONED = re.compile(r"^(lib[\w+.-]*?)\.so\.\d[\d.]*$")


def _mapped(probe, tests: list[str]) -> dict[str, list[str]]:
    """Real path of each shared object the tests map -> the tests mapping it."""
    out: dict[str, list[str]] = {}
    for test in tests:
        for lib in probe.of(test).libs:
            real = probe.realpath(lib)
            entry = probe.files.get(real)
            if entry is None or entry.type != "f" or protected(real) or protected(lib) or ".so" not in real:
                continue
            out.setdefault(real, []).append(test)
    return out


def _tolerated_last(targets: list[Target]) -> list[Target]:
    return sorted(narrow_first(targets), key=lambda t: posixpath.basename(t.path).split(".")[0] in TOLERATED)


def _system(path: str) -> bool:
    return not any(d in path for d in EXTENSION_DIRS)


def _libraries(probe, folders: set[str]) -> dict[str, list[tuple[str, str]]]:
    """Versioned library names in ``folders``: folder -> [(path, entry type)]."""
    out: dict[str, list[tuple[str, str]]] = {f: [] for f in folders}
    for path, entry in probe.files.items():
        folder, _, name = path.rpartition("/")
        if folder in out and VERSIONED.match(name):
            out[folder].append((path, entry.type))
    return out


def _system_libraries(probe, tests: list[str]):
    """The index of versioned names (``_libraries``) beside the system libraries the tests
    map, and each such library with its users and the versioned symlinks beside it that
    resolve to it (libz.so.1 -> libz.so.1.2.13)."""
    mapped = {r: u for r, u in _mapped(probe, tests).items() if _system(r)}
    index = _libraries(probe, {posixpath.dirname(r) for r in mapped})
    found = []
    for real, users in mapped.items():
        links = [p for p, kind in index[posixpath.dirname(real)] if kind == "l" and probe.realpath(p) == real]
        found.append((real, users, sorted(links)))
    return index, found


def _soname_of_real(target: Target, gold) -> Target | None:
    """The target if its name is among the strings of the ELF file ``real`` (its DT_SONAME
    is): only the soname link matters (libbz2.so.1.0, not the extra libbz2.so.1)."""
    data = gold.read(target.data.real) or b""
    return target if data[:4] == b"\x7fELF" and b"\0" + target.name.encode() + b"\0" in data else None


def _stem(name: str) -> str:
    return name.split(".so")[0]


class _LibOperator(Operator):
    # the ΔD breaks libraries that later build steps (Python itself) may need
    order = 90


@register
class ElfMagicCorrupt(_LibOperator):
    """A shared library whose first four bytes (the ELF magic) were zeroed, as a faulty disk
    or a careless binary patch would. Contrived: named-only."""

    name = "elf_magic_corrupt"
    symptom = "Loading a shared library fails: 'invalid ELF header' (ImportError, or the program does not start)."
    hint = "The shared libraries and compiled extension modules Python loads."
    shows = (r"invalid ELF header",)
    offline = "Write the four ELF magic bytes back at the start of the library {name}."
    default = False

    def applies_to(self, probe, tests):
        return _tolerated_last([
            self.target(path=real, name=posixpath.basename(real), touching=users)
            for real, users in _mapped(probe, tests).items()
        ])

    def apply(self, target):
        return [f"RUN printf '\\000\\000\\000\\000' | dd of={q(target.path)} bs=1 count=4 conv=notrunc status=none"]

    def solution(self, target):
        return [f"printf '\\177ELF' | dd of={q(target.path)} bs=1 count=4 conv=notrunc status=none"]


class LinkData(TargetData):
    real: str  # the library the link resolves to
    original: str  # the link's text, and what it is changed to
    new: str


class _SymlinkOperator(_LibOperator):
    Data = LinkData

    def applies_to(self, probe, tests):
        index, libraries = _system_libraries(probe, tests)
        targets = []
        for real, users, links in libraries:
            for link in links:
                new = self.choose(probe, index, link, real)
                if new is not None:
                    targets.append(self.target(path=link, name=posixpath.basename(link), touching=users,
                                               real=real, original=probe.files[link].link, new=new))
        return narrow_first(targets)

    def choose(self, probe, index, link: str, real: str) -> str | None:
        """What the link should point to instead, or None."""
        raise NotImplementedError

    offline = "ldconfig recreates the soname link {name} from the library's own SONAME (or relink it by hand)."

    def prepare(self, target, gold):
        return _soname_of_real(target, gold)

    def apply(self, target):
        return [f"RUN ln -sfn {q(target.data.new)} {q(target.path)}"]

    def solution(self, target):
        return [f"ln -sfn {q(target.data.original)} {q(target.path)}"]


@register
class LibSymlinkRetarget(_SymlinkOperator):
    """An administrator who pointed a library's soname link at another library file in the
    same directory (the wrong one of two similar names)."""

    name = "lib_symlink_retarget"
    undone_by = "loader"
    symptom = ("Loading a module that needs {name} fails with 'version ... not found', 'undefined symbol' "
               "or a similar error from the dynamic loader.")
    shows = (r"version `?\S+'? not found", r"undefined symbol", r"no version information", r"\.so[.\d]*:")
    hint = "Which file the dynamic loader actually opens for the library {name}."

    def choose(self, probe, index, link, real):
        stem = _stem(posixpath.basename(real))
        mapped = {probe.realpath(lib) for lib in probe.libs}
        options = []
        for path, kind in index.get(posixpath.dirname(link), []):
            name = posixpath.basename(path)
            other = _stem(name)
            if kind != "f":
                continue
            if other.startswith(stem) or stem.startswith(other) or path in mapped or protected(path):
                continue
            common = len(posixpath.commonprefix([stem, other]))
            options.append((-common, name))
        return min(options)[1] if options else None


@register
class LibSymlinkDangling(_SymlinkOperator):
    """A half-finished library upgrade: the soname link was moved to the next release's file,
    which was never unpacked."""

    name = "lib_symlink_dangling"
    undone_by = "loader"
    symptom = ("'cannot open shared object file: No such file or directory' for {name}, "
               "though the library package is installed.")
    shows = (r"cannot open shared object file",)
    hint = "The symbolic links through which the dynamic loader finds the library {name}."

    def choose(self, probe, index, link, real):
        original = probe.files[link].link
        m = re.match(r"^(.*?)(\d+)$", original)
        if not m:
            return None
        for bump in range(1, 10):
            new = f"{m.group(1)}{int(m.group(2)) + bump}"
            if posixpath.join(posixpath.dirname(link), new) not in probe.files:
                return new
        return None


class ShadowData(TargetData):
    real: str  # the library the stub shadows
    old: str  # LD_LIBRARY_PATH before


@register
class LdLibraryPathShadow(_LibOperator):
    """A development install that left a linker script named like a runtime library in
    /usr/local/lib, with ``LD_LIBRARY_PATH`` set to search there first."""

    name = "ld_library_path_shadow"
    symptom = ("Loading {name} fails with 'invalid ELF header' (or 'file too short') although the installed "
               "library is intact.")
    hint = "Where the dynamic loader searches for shared libraries, and in which order."
    shows = (r"invalid ELF header", r"file too short")
    offline = "Delete the stray {name} in the directory LD_LIBRARY_PATH names first."

    DIR = "/usr/local/lib"
    Data = ShadowData

    def applies_to(self, probe, tests):
        targets = []
        for real, users, links in _system_libraries(probe, tests)[1]:
            names = sorted({posixpath.basename(real)} | {posixpath.basename(s) for s in links})
            for name in names:
                path = f"{self.DIR}/{name}"
                if VERSIONED.match(name) and path not in probe.files:
                    targets.append(self.target(path=path, name=name, touching=users, real=real,
                                               old=probe.env.get("LD_LIBRARY_PATH", "")))
        return narrow_first(targets)

    def prepare(self, target, gold):
        return _soname_of_real(target, gold)

    def apply(self, target):
        # a linker script (as a -dev package installs for libfoo.so), not a loadable library
        stub = ("/* GNU ld script\n   Use the shared library, but some functions are only in\n"
                f"   the static library.  */\nINPUT({posixpath.basename(target.data.real)})\n").encode()
        value = ":".join(p for p in (self.DIR, target.data.old) if p)
        return [f"RUN {write_file_line(target.path, stub)}", f"ENV LD_LIBRARY_PATH={value}"]

    def solution(self, target):
        # the variable stays set (a script cannot unset an image's ENV): remove what it finds
        return [f"rm -f {q(target.path)}"]


class ExtensionData(WheelData):
    module: str


@register
class ExtensionModuleRemoved(Reinstall):
    """An image-slimming step that deleted compiled files it took for build leftovers: an
    installed distribution's extension module is gone."""

    name = "extension_module_removed"
    symptom = ("Importing the compiled module {module} of {dist} fails: ModuleNotFoundError, or the package falls "
               "back without it.")
    hint = "The compiled extension modules installed for Python's packages."
    shows = (r"No module named", r"ModuleNotFoundError", r"cannot import name")
    Data = ExtensionData

    def applies_to(self, probe, tests):
        by_path = {path: mod for mod, path in probe.modules.items()}
        targets = []
        for real, users in _mapped(probe, tests).items():
            if _system(real) or not real.endswith(".so") or "/lib-dynload/" in real:
                continue  # the standard library's own modules have no copy in the image
            wheel = wheel_data(probe, owner(probe, real))
            if wheel.get("reinstall"):
                targets.append(self.target(path=real, name=posixpath.basename(real), touching=users, **wheel,
                                           module=by_path.get(real, posixpath.basename(real).split(".")[0])))
        return _tolerated_last(targets)
