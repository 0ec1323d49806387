"""Operators: package_files (files of installed distributions gone missing or cut short).

A submodule only some code paths import, or a data file only some functions read: when
one goes missing or is cut short, the distribution still imports and only the tests that
reach that file fail. The file is chosen from what tests touch themselves (while they run,
or while pytest imports their module), never from what the session start-up touches
(conftest imports), which would break every test. (Test runs go on past a test module that
fails to import, so a file one module imports fails that module's tests only.)
"""

from __future__ import annotations

from cligym.invert.operators.base import register
from cligym.invert.operators.dependencies import (
    Reinstall,
    WheelData,
    wheel_data,
)
from cligym.invert.operators.probing import (
    dist_tops,
    is_tooling,
    narrow_first,
    opened,
    own_items,
    site_packages,
    tooling_tops,
    under,
)
from cligym.invert.operators.targets import pycache_glob, q
from cligym.models.probe import Dist, Probe, Touch

CATEGORY = "package_files"

#: Files that are code, compiled code or import machinery, not data.
NOT_DATA = (".py", ".pyc", ".pyo", ".pyi", ".so", ".pyd", ".pth", ".dll", ".dylib")


# ---- which files belong to which distribution ----------------------------------------------


def installed_files(probe: Probe) -> dict[str, Dist]:
    """Files that non-tooling distributions installed under site-packages (their RECORD),
    as absolute paths, each with its distribution."""
    site = site_packages(probe)
    tooling = tooling_tops(probe)
    out: dict[str, Dist] = {}
    for dist in probe.dists:
        if not dist.path or not under(dist.path, site) or is_tooling(dist):
            continue
        if set(dist_tops(dist)) & tooling:
            continue
        for rel in dist.files:
            if not rel.startswith(("..", "/")):
                out[f"{site}/{rel}"] = dist
    return out


def collection_items(probe: Probe, key: str) -> set[str]:
    """What the session start-up (pytest, conftest imports) touched (touch list ``key``):
    breaking any of it breaks every test."""
    return set(getattr(probe.touch.get("session", Touch()), key))


def submodules(probe: Probe, tests: list[str]) -> list[tuple[str, str, Dist, list[str]]]:
    """Python submodules (not a package's ``__init__``, not a top-level module) of installed
    non-tooling distributions that some tests import (while they run or while their
    module is imported) and the session start-up does not: (module, file, distribution,
    touching tests)."""
    site = site_packages(probe)
    files = installed_files(probe)
    startup = collection_items(probe, "modules")
    found: dict[str, tuple[str, str, Dist, list[str]]] = {}
    for module, path in sorted(probe.modules.items()):
        dist = files.get(path)
        if dist is None or "." not in module or module in startup or path in found:
            continue
        if not path.endswith(".py") or path.endswith("/__init__.py"):
            continue
        if path[len(site) + 1:-3].replace("/", ".") != module:
            continue  # an alias of another name, not the module's own file
        touching = [t for t in tests if module in own_items(probe, t, "modules")]
        found[path] = (module, path, dist, touching)
    return list(found.values())


def is_data(path: str) -> bool:
    """A data file of a package: not code, not metadata, not cached bytecode."""
    parts = path.split("/")
    if any(p.endswith((".dist-info", ".egg-info", ".data")) or p == "__pycache__" for p in parts):
        return False
    return not parts[-1].endswith(NOT_DATA) and ".so." not in parts[-1]


def data_files(probe: Probe, tests: list[str]) -> list[tuple[str, Dist, list[str]]]:
    """Data files of installed non-tooling distributions that some tests open themselves
    and the session start-up does not: (path, distribution, touching tests)."""
    files = installed_files(probe)
    startup = {probe.realpath(p) for p in collection_items(probe, "files")}
    found = opened(probe, tests, lambda real: real in files and real not in startup and is_data(real))
    return [(path, files[path], touching) for path, touching in found.items()]


# ---- the operators ---------------------------------------------------------------------------


class PackageFileData(WheelData):
    #: package_data_truncated: the original size, and how many bytes are kept.
    size: int = 0
    keep: int = 0


class _Reinstalled(Reinstall):
    Data = PackageFileData
    offline = (
        "Reinstall {dist}=={version} with pip from the wheel in the image's local wheelhouse "
        "(pip is configured for it; no index is needed)."
    )


@register
class PackageSubmoduleRemoved(_Reinstalled):
    """A submodule file of an installed distribution deleted, its cached bytecode with it:
    what an upgrade interrupted half-way through its file moves leaves behind, or an
    image-slimming step that prunes modules it thinks nothing imports. The package still
    imports; only code reaching that submodule fails."""

    name = "package_submodule_removed"
    symptom = (
        "Part of the suite fails with ModuleNotFoundError: No module named '{name}', although "
        "{dist} itself imports and its other features work."
    )
    hint = "Whether the installed files of the distribution {dist} are all there."
    shows = (r"ModuleNotFoundError", r"No module named", r"cannot import name")

    def applies_to(self, probe, tests):
        return narrow_first([
            self.target(path=path, name=module, touching=touching, **wheel_data(probe, dist))
            for module, path, dist, touching in submodules(probe, tests)
        ])

    def apply(self, target):
        return [f"RUN rm -f {q(target.path)} {pycache_glob(target.path)}"]


@register
class PackageDataRemoved(_Reinstalled):
    """A data file shipped inside an installed distribution deleted: an image-slimming rule
    that drops "unneeded" files (``*.json``, ``*.txt``, docs and examples) from
    site-packages, not knowing the package reads them at run time."""

    name = "package_data_removed"
    symptom = (
        "Only the tests reaching a data file that {dist} ships fail, with FileNotFoundError "
        "or another 'No such file' error for a path inside the installed package."
    )
    hint = "Whether the files installed with the distribution {dist} are complete."
    shows = (r"FileNotFoundError", r"No such file")

    def applies_to(self, probe, tests):
        return narrow_first([
            self.target(path=path, name=path.rpartition("/")[2], touching=touching, **wheel_data(probe, dist))
            for path, dist, touching in data_files(probe, tests)
        ])


def kept_prefix(size: int) -> int:
    """How much of a file of ``size`` bytes survives a disk filling up mid-write: whole
    4 KiB blocks of its first half when there are any, else its first half."""
    half = size // 2
    return half - half % 4096 if half >= 4096 else half


@register
class PackageDataTruncated(_Reinstalled):
    """A data file shipped inside an installed distribution cut short: an install that ran
    out of disk space while writing it (the file is there, only its first blocks are)."""

    name = "package_data_truncated"
    symptom = (
        "Only the tests reaching a data file that {dist} ships fail: reading it stops early "
        "(a JSON, YAML or text parser reports unexpected end of data or invalid content)."
    )
    hint = "Whether the files installed with the distribution {dist} are intact."
    shows = (
        r"JSONDecodeError", r"Expecting (value|property name|',' delimiter|':' delimiter)",
        r"Unterminated string", r"unexpected end", r"end of (file|stream|data)", r"EOFError",
        r"Parser?Error", r"ScannerError", r"did not find expected", r"UnicodeDecodeError",
        r"truncated", r"not well-formed", r"no element found",
    )

    def applies_to(self, probe, tests):
        targets = []
        for path, dist, touching in data_files(probe, tests):
            size = probe.files[path].size
            if size >= 2:
                targets.append(self.target(path=path, name=path.rpartition("/")[2], touching=touching, size=size,
                                           keep=kept_prefix(size), **wheel_data(probe, dist)))
        return narrow_first(targets)

    def apply(self, target):
        return [f"RUN truncate -s {int(target.data.keep)} {q(target.path)}"]
