"""Operators: package_metadata (what installed distributions say about themselves)."""

from __future__ import annotations

import re

from cligym.invert.operators.base import register
from cligym.invert.operators.dependencies import (
    REINSTALL,
    Reinstall,
    WheelData,
    owner,
    wheel_data,
)
from cligym.invert.operators.probing import (
    is_tooling,
    narrow_first,
    site_packages,
    tests_using,
    under,
)
from cligym.invert.operators.targets import q

CATEGORY = "package_metadata"


def _scanned(probe, tests: list[str], basename: str) -> set[str]:
    """Tests that open ``basename`` of (nearly) every distribution: a scan of all entry
    points, not a read of one distribution's metadata."""
    everyone = {d.path for d in probe.dists if d.path and f"{d.path}/{basename}" in probe.files}
    out = set()
    for test in tests:
        opened = {f.rpartition("/")[0] for f in probe.of(test).files if f.endswith("/" + basename)}
        if everyone and len(opened & everyone) >= max(2, len(everyone) // 2):
            out.add(test)
    return out


class DistInfoData(WheelData):
    rank: int  # 1: only seen in a scan of every distribution's entry points (tried last)


@register
class DistInfoRemoved(Reinstall):
    """A cleanup that deleted ``*.dist-info`` directories to slim the image, or an
    interrupted reinstall: the code of a distribution is there, its metadata is not."""

    name = "dist_info_removed"
    undone_by = "venv_recreated"
    symptom = "PackageNotFoundError (or missing plugins and entry points) for {dist}, although its code is importable."
    hint = "The installed metadata of the distribution {dist}."
    shows = (r"PackageNotFoundError", r"No package metadata", r"DistributionNotFound", r"entry.?points?")
    Data = DistInfoData

    def applies_to(self, probe, tests):
        scans = _scanned(probe, tests, "entry_points.txt")
        targets = []
        for dist in probe.dists:
            if not dist.path or dist.path not in probe.files or is_tooling(dist):
                continue
            prefix = dist.path + "/"
            direct = tests_using(probe, tests, "files",
                                 lambda f, p=prefix: f.startswith(p) and not f.endswith("/entry_points.txt"))
            if direct:
                touching, rank = direct, 0
            else:
                touching = tests_using(probe, tests, "files", lambda f, p=prefix: f.startswith(p))
                rank = 1 if set(touching) <= scans else 0
            targets.append(self.target(path=dist.path, name=dist.name, touching=touching, rank=rank,
                                       **wheel_data(probe, dist)))
        # a dist-info only seen in a scan of all entry points rarely matters: those last
        return sorted(narrow_first(targets), key=lambda t: t.data.rank)

    def apply(self, target):
        return [f"RUN rm -rf {q(target.path)}"]


class EntryPointsData(WheelData):
    tool: bool  # of the test tooling (tried last)
    line: int = 0  # the entry whose '=' is taken out


@register
class EntryPointsCorrupted(Reinstall):
    """A bad merge or hand edit of a distribution's ``entry_points.txt`` that left an entry
    without its ``=``: every tool that lists entry points (pytest first) stops."""

    name = "entry_points_corrupted"
    symptom = "pytest (and anything listing entry points) stops with ValueError: not enough values to unpack."
    hint = "The entry point declarations of the installed distributions."
    shows = (r"not enough values to unpack", r"entry.?points?")
    offline = ("Delete the damaged entry_points.txt of {dist} (pip itself cannot read it), then "
               + REINSTALL[0].lower() + REINSTALL[1:])
    # pytest reads every distribution's entry points at start-up: every test breaks
    broad = True
    # ...but only where plugins autoload: the verifier runs pytest with plugin autoloading
    # off, so with nothing done it would score 1 (measured: every such state was discarded
    # as trivial). Named-only, like the test-configuration operators.
    default = False
    Data = EntryPointsData

    def applies_to(self, probe, tests):
        targets = []
        for dist in probe.dists:
            path = f"{dist.path}/entry_points.txt"
            if not dist.path or path not in probe.files or is_tooling(dist):
                continue
            targets.append(self.target(path=path, name=dist.name, touching=probe.touching(tests, "files", path),
                                       tool=False, **wheel_data(probe, dist)))
        return narrow_first(targets)

    def inspect(self, target, gold):
        raw = gold.read(target.path) or b""
        for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
            if "=" in line and not line.lstrip().startswith(("#", "[")):
                return target.with_data(line=number)
        return None

    def apply(self, target):
        # an entry without its '=' (as after a bad merge): the file no longer parses
        return [f"RUN sed -i '{target.data.line}s/ *= */ /' {q(target.path)}"]

    def solution(self, target):
        # pip reads the entry points to find the scripts it uninstalls: the damaged file goes first
        return [f"rm -f {q(target.path)}", target.data.reinstall]


IMPORT_LINE = re.compile(r"^from ([\w.]+) import ")


class LauncherData(WheelData):
    site: str
    # the launcher's import line, the module it imports, and the missing one it is changed to
    line: int = 0
    module: str = ""
    broken: str = ""


@register
class ConsoleScriptBroken(Reinstall):
    """A console-script launcher left over from another release of its distribution: it
    imports a module that the installed release does not have."""

    name = "console_script_broken"
    undone_by = "venv_recreated"
    symptom = "Running the command {name} fails with ModuleNotFoundError before it does anything."
    hint = "The launcher script installed for the command {name}."
    shows = (r"ModuleNotFoundError", r"No module named")
    Data = LauncherData

    def applies_to(self, probe, tests):
        bindir = (probe.python.get("prefix") or "/opt/venv") + "/bin"
        scripts: dict[str, set[str]] = {}
        for test in tests:
            for command in probe.of(test).commands:
                path = command if "/" in command else f"{bindir}/{command}"
                if under(path, bindir) and probe.files.get(path) and probe.files[path].type == "f":
                    scripts.setdefault(path, set()).add(test)
        targets = []
        for path, users in scripts.items():
            name = path.rpartition("/")[2]
            if name.split("-")[0].split(".")[0] in ("python", "python3", "pip", "pip3", "pytest", "py"):
                continue
            wheel = wheel_data(probe, owner(probe, path))
            if wheel.get("reinstall"):
                targets.append(self.target(path=path, name=name, touching=[t for t in tests if t in users],
                                           site=site_packages(probe), **wheel))
        return narrow_first(targets)

    def inspect(self, target, gold):
        raw = gold.read(target.path) or b""
        if not raw.startswith(b"#!") or b"python" not in raw.split(b"\n", 1)[0] or len(raw) > 65536:
            return None
        for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
            m = IMPORT_LINE.match(line)
            if not m:
                continue
            module = m.group(1)
            package = module.rpartition(".")[0] or module
            site = target.data.site
            for candidate in (f"{package}._cli", f"{package}._console", f"{package}._entry"):
                rel = candidate.replace(".", "/")
                if all(gold.read(f"{site}/{rel}{end}") is None for end in (".py", "/__init__.py")):
                    return target.with_data(line=number, module=module, broken=candidate)
            return None
        return None

    def apply(self, target):
        d = target.data
        return [f"RUN sed -i '{d.line}s/^from {re.escape(d.module)} import/from {d.broken} import/' {q(target.path)}"]
