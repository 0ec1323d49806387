"""Operators: system_files (files of the operating system and of the interpreter's
standard library that some tests read: a pure-Python stdlib module, the media-type table,
the OS release file)."""

from __future__ import annotations

import re

from cligym.invert.operators.base import GoldFiles, Operator, RestoreOperator, register
from cligym.invert.operators.probing import (
    file_mode,
    narrowest_paths,
    opened,
    own_touch,
    under,
)
from cligym.invert.operators.targets import (
    RestoreData,
    Target,
    TargetData,
    q,
    run_python,
)
from cligym.models.probe import Probe

CATEGORY = "system_files"

# ---- a pure-Python module of the standard library ------------------------------------

#: Modules whose damage takes the interpreter's start-up, site or codec machinery with it.
INFRASTRUCTURE = ("encodings", "importlib", "site", "sitecustomize", "usercustomize", "sysconfig",
                  "_sysconfigdata", "os", "posixpath", "genericpath", "stat", "abc", "codecs", "io",
                  "_collections_abc", "_sitebuiltins", "zipimport", "runpy", "pkgutil")


def _infrastructure(module: str) -> bool:
    top = module.split(".")[0]
    return any(top == n or top.startswith(n + "_") or module.startswith(n + ".") for n in INFRASTRUCTURE) or (
        top.startswith("_sysconfigdata")
    )


class StdlibData(RestoreData):
    module: str
    cut: int = 0  # the offset the module is cut at


@register
class StdlibModuleCorrupted(RestoreOperator):
    """A pure-Python module of the standard library cut off in the middle, as a disk that
    filled up during an interpreter upgrade leaves it. The image keeps no copy: named-only."""

    name = "stdlib_module_corrupted"
    symptom = (
        "Importing the standard-library module {module} fails with a SyntaxError that points "
        "into the Python installation, not into the project."
    )
    hint = "the interpreter's standard library ({module})"
    shows = (r"SyntaxError", r"was never closed", r"unexpected EOF", r"unterminated", r"expected an indented block")
    default = False
    Data = StdlibData

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        stdlib = (probe.python.get("stdlib") or "").rstrip("/")
        if not stdlib:
            return []
        users: dict[str, list[str]] = {}
        names: dict[str, str] = {}
        for test in tests:
            for module in own_touch(probe, test).modules:
                path = probe.modules.get(module, "")
                if (
                    not path.endswith(".py")
                    or not under(path, stdlib)
                    or "-packages/" in path
                    or "/lib-dynload/" in path
                    or _infrastructure(module)
                ):
                    continue
                entry = probe.files.get(path)
                if entry is None or entry.type != "f" or entry.size < 64:
                    continue
                names.setdefault(path, module)
                if test not in users.setdefault(path, []):
                    users[path].append(test)
        # only some tests: a module every test imports is the interpreter's, not the tests'
        found = {p: t for p, t in users.items() if len(t) < len(tests)}
        return [
            self.target(path=path, name=names[path], touching=touching, module=names[path],
                        mode=file_mode(probe, path))
            for path, touching in narrowest_paths(found)
        ]

    def check(self, target: Target, raw: bytes) -> Target | None:
        cut = _cut_point(raw)
        return None if cut is None else target.with_data(cut=cut)

    def apply(self, target: Target) -> list[str]:
        return [f"RUN truncate -s {int(target.data.cut)} {q(target.path)}"]


def _cut_point(content: bytes) -> int | None:
    """An offset near the middle at which the source no longer compiles."""
    middle = len(content) // 2
    for offset in [middle + d for d in range(0, min(middle, 4096), 7)]:
        try:
            compile(content[:offset], "<cut>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return offset
    return None


# ---- the media-type table ------------------------------------------------------------

MIME_TABLES = ("/etc/mime.types", "/etc/httpd/mime.types", "/etc/httpd/conf/mime.types",
               "/etc/apache/mime.types", "/etc/apache2/mime.types", "/usr/local/etc/httpd/conf/mime.types",
               "/usr/local/lib/netscape/mime.types", "/usr/local/etc/mime.types")

_ROTATE = r'''
path = {path!r}
with open(path, "rb") as handle:
    lines = handle.read().split(b"\n")
rows = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith(b"#")
        and len(line.split()) >= 2]
types = [lines[i].split()[0] for i in rows]
for n, i in enumerate(rows):
    head = lines[i].split()[0]
    lines[i] = types[(n + 1) % len(types)] + lines[i][len(head):]
with open(path, "wb") as handle:
    handle.write(b"\n".join(lines))
'''

_LATIN1 = r'''
path = {path!r}
with open(path, "rb") as handle:
    lines = handle.read().split(b"\n")
at = next((i for i, line in enumerate(lines) if line.strip() and not line.startswith(b"#")), len(lines))
lines.insert(at, b"# \xe9dit\xe9 localement : types ajout\xe9s par l'administrateur")
lines.insert(at + 1, b"application/x-caf\xe9-menu\t\t\t\t\tmenu")
with open(path, "wb") as handle:
    handle.write(b"\n".join(lines))
'''


def _mime_tables(probe: Probe, tests: list[str]) -> list[tuple[str, list[str]]]:
    return narrowest_paths(opened(probe, tests, lambda p: p in {probe.realpath(m) for m in MIME_TABLES}))


def _rows(raw: bytes) -> list[bytes]:
    return [ln for ln in raw.split(b"\n") if ln.strip() and not ln.lstrip().startswith(b"#") and len(ln.split()) >= 2]


class MimeData(TargetData):
    line: int = 0  # where the two Latin-1 lines go (1-based), which the repair deletes


@register
class MimeTypesCorrupted(Operator):
    """An administrator who added local media types to the system table with a Latin-1
    editor: one line is not valid UTF-8."""

    name = "mime_types_corrupted"
    symptom = "Looking up media types (mimetypes) fails with UnicodeDecodeError while reading the system's table."
    hint = "the system's table of media types that the mimetypes module reads"
    shows = (r"UnicodeDecodeError", r"codec can't decode")
    offline = "Delete (or re-encode as UTF-8) the locally added lines of the media-type table that are not UTF-8."
    Data = MimeData

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        return [self.target(path=path, touching=touching) for path, touching in _mime_tables(probe, tests)]

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        raw = gold.read(target.path) or b""
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        lines = raw.split(b"\n")
        at = next((i for i, line in enumerate(lines) if line.strip() and not line.startswith(b"#")), None)
        return None if at is None else target.with_data(line=at + 1)

    def apply(self, target: Target) -> list[str]:
        return [run_python(_LATIN1.format(path=target.path))]

    def solution(self, target: Target) -> list[str]:
        first = int(target.data.line)
        return [f"sed -i '{first},{first + 1}d' {q(target.path)}"]


@register
class MimeTypesShifted(RestoreOperator):
    """The system media-type table with its type column shifted by one row, as a botched
    column edit would leave it. The image keeps no copy: named-only."""

    name = "mime_types_shifted"
    symptom = "mimetypes.guess_type gives wrong media types for common file names."
    hint = "the system's table of media types that the mimetypes module reads"
    shows = (r"\b(text|image|application|audio|video)/[\w.+-]+",)
    default = False

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        return [self.target(path=path, touching=touching, mode=file_mode(probe, path))
                for path, touching in _mime_tables(probe, tests)]

    def check(self, target: Target, raw: bytes) -> Target | None:
        return target if len({r.split()[0] for r in _rows(raw)}) >= 2 else None

    def apply(self, target: Target) -> list[str]:
        return [run_python(_ROTATE.format(path=target.path))]


# ---- the OS release file ------------------------------------------------------------

OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")

_SPACED = r'''
import re
path = {path!r}
with open(path, "rb") as handle:
    text = handle.read()
with open(path, "wb") as handle:
    handle.write(re.sub(rb"^([A-Za-z0-9_]+)=", rb"\1 = ", text, flags=re.M))
'''


@register
class OsReleaseCorrupted(Operator):
    """The os-release file rendered by a configuration template with ``KEY = value`` lines,
    which no os-release parser accepts."""

    name = "os_release_corrupted"
    symptom = (
        "platform.freedesktop_os_release() returns only the generic defaults (NAME 'Linux'), "
        "so ID and VERSION_ID are missing."
    )
    hint = "the file describing the operating system release"
    shows = (r"\bLinux\b", r"VERSION_ID", r"freedesktop_os_release", r"os.release")
    offline = "Join the KEY = value lines of the OS release file again into KEY=value."

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        reals = {probe.realpath(p) for p in OS_RELEASE}
        return [
            self.target(path=path, touching=touching)
            for path, touching in narrowest_paths(opened(probe, tests, lambda p: p in reals))
        ]

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        """Keep a file of KEY=value lines with none spaced already (the repair is then exact)."""
        raw = gold.read(target.path) or b""
        if re.search(rb"^[A-Za-z0-9_]+ = ", raw, re.MULTILINE) or not re.search(rb"^[A-Za-z0-9_]+=", raw, re.MULTILINE):
            return None
        return target

    def apply(self, target: Target) -> list[str]:
        return [run_python(_SPACED.format(path=target.path))]

    def solution(self, target: Target) -> list[str]:
        return [f"sed -i 's/^\\([A-Za-z0-9_][A-Za-z0-9_]*\\) = /\\1=/' {q(target.path)}"]
