"""Reading the probe: the questions operators ask of it to find their targets (where the
project lives, which tests touch something, whose a module is, which commands tests run).

"The project's directory" is always the probe's record of it (``project_root``: pytest's
rootdir, else the gold record's workdir), never a literal path.
"""

from __future__ import annotations

import re

from packaging.utils import canonicalize_name

from cligym.invert.operators.targets import Target
from cligym.models.probe import Dist, Probe, Touch


def under(path: str, *roots: str) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def project_root(probe: Probe) -> str:
    """The directory of the project and its tests: pytest's rootdir, else the gold workdir."""
    return probe.rootdir or probe.workdir


def site_packages(probe: Probe) -> str:
    paths = probe.python.get("site_packages") or []
    venv = [p for p in paths if p.startswith(probe.python.get("prefix", "/opt/venv"))]
    return (venv or paths or ["/opt/venv/lib/python3.11/site-packages"])[0]


def file_mode(probe: Probe, path: str) -> str:
    entry = probe.files.get(path)
    return entry.mode if entry is not None and entry.mode else "644"


# ---- distributions, tooling and the tests that use them --------------------------------

#: Distributions (canonical names) and top-level modules of pytest and the packaging
#: tools: breaking them breaks the test runner rather than the project.
TOOLING = frozenset({
    "pytest", "pluggy", "iniconfig", "pip", "setuptools", "packaging", "wheel", "pygments",
    "exceptiongroup", "tomli", "colorama", "py",
})
TOOLING_TOPS = TOOLING | {"_pytest", "pkg_resources", "_distutils_hack", "__main__"}


def is_tooling(dist: Dist) -> bool:
    """pytest, a packaging tool, or a pytest plugin (a ``pytest11`` entry point). The
    verifier pins their files byte for byte and a reinstall rewrites them, so a task that
    broke one could not be repaired to a reward: no operator targets them."""
    return canonicalize_name(dist.name) in TOOLING or any(ep.get("group") == "pytest11" for ep in dist.entry_points)


def tooling_tops(probe: Probe) -> frozenset[str]:
    """``TOOLING_TOPS`` and the top-level modules of gold's pytest plugins (worked out once
    for the probe last asked about: operators ask per module)."""
    last = _TOOLING_OF
    if last and last[0] is probe:
        return last[1]
    tops = frozenset(TOOLING_TOPS).union(*(dist_tops(d) for d in probe.dists if is_tooling(d)))
    _TOOLING_OF[:] = [probe, tops]
    return tops


_TOOLING_OF: list = []


def dist_tops(dist: Dist) -> list[str]:
    """Top-level module names a distribution installs (top_level.txt or its RECORD)."""
    tops = set(dist.top_level)
    for entry in dist.files:
        first, sep, _ = entry.partition("/")
        if first.startswith("..") or first == "__pycache__" or first.endswith((".dist-info", ".egg-info", ".data")):
            continue
        if sep:
            tops.add(first)
        elif first.endswith(".py"):
            tops.add(first[:-3])
        elif ".so" in first or first.endswith(".pyd"):
            tops.add(first.split(".")[0])
    return sorted(t for t in tops if t.isidentifier())


def tests_using(probe: Probe, tests: list[str], key: str, match) -> list[str]:
    """The tests whose touch list ``key`` has an item for which ``match`` is true (asked
    once per distinct item: tests share most of what they touch)."""
    lists = {t: getattr(probe.of(t), key) for t in tests}
    hits = {v for v in set().union(*lists.values()) if match(v)}
    return [t for t in tests if not hits.isdisjoint(lists[t])]


def narrow_first(targets: list[Target]) -> list[Target]:
    """The targets some test touches, the ones fewer tests touch first."""
    return sorted((t for t in targets if t.touching), key=lambda t: (len(t.touching), t.key, t.name))


def narrowest_paths(found: dict[str, list[str]]) -> list[tuple[str, list[str]]]:
    """``{path: tests}`` as (path, tests) pairs with tests, the ones fewer tests touch first."""
    return [(path, tests) for path, tests in sorted(found.items(), key=lambda item: (len(item[1]), item[0])) if tests]


# ---- what a test touches itself ----------------------------------------------------------

TOUCH_KEYS = ("modules", "files", "env", "commands", "libs")


def own_items(probe: Probe, test: str, key: str) -> set[str]:
    """What a test touched itself in touch list ``key``: its run and its module's collection
    (found from the test id when no file was recorded), without the session start-up that
    every test shares (pytest, conftest imports)."""
    mine = probe.touch.get(test, Touch())
    module = probe.touch.get(mine.file or "file:" + test.split("::")[0], Touch())
    return set(getattr(mine, key)) | set(getattr(module, key))


def own_touch(probe: Probe, test: str) -> Touch:
    """``own_items`` of every touch list."""
    file = probe.touch.get(test, Touch()).file
    return Touch(**{k: sorted(own_items(probe, test, k)) for k in TOUCH_KEYS}, file=file)


def opened(probe: Probe, tests: list[str], keep) -> dict[str, list[str]]:
    """Real paths (symlinks resolved) of the regular files the tests opened themselves,
    for which ``keep(real_path)`` holds, each with its tests in ``tests`` order."""
    found: dict[str, list[str]] = {}
    for test in tests:
        for path in own_touch(probe, test).files:
            real = probe.realpath(path)
            entry = probe.files.get(real)
            if entry is None or entry.type != "f" or not keep(real):
                continue
            if test not in found.setdefault(real, []):
                found[real].append(test)
    return found


# ---- modules: whose they are, which ones tests import --------------------------------------

#: Test modules and conftest files (never a target of a change to "the project's code").
TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test|conftest)\.py$")

def source_tops(probe: Probe, root: str) -> set[str]:
    """Top-level module names the project ships in its source tree under ``root`` (flat or
    src layout)."""
    pattern = re.compile(rf"^{re.escape(root)}/(?:src/)?([A-Za-z_]\w*)(?:/__init__\.py|\.py)$")
    return {m.group(1) for path in probe.files if (m := pattern.match(path))} - {"setup", "conftest"}


def is_project(probe: Probe, name: str, path: str) -> bool:
    return under(path, probe.workdir) or name.split(".")[0] in source_tops(probe, probe.workdir)


def module_kind(probe: Probe, name: str) -> str | None:
    """'stdlib', 'dep' (a non-pytest dependency) or 'project' for a loaded module, else None."""
    path = probe.modules.get(name)
    if not path:
        return None
    if is_project(probe, name, path):
        return "project"
    if under(path, probe.python.get("stdlib", "/usr/lib/python3")):
        return "stdlib"
    if any(under(path, sp) for sp in probe.python.get("site_packages", [])):
        return None if name.split(".")[0] in tooling_tops(probe) else "dep"
    return None


def touched_tops(probe: Probe, tests: list[str], kinds: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """Public top-level modules that some tests import (pytest itself does not), narrowest
    first: (name, touching tests)."""
    seen: dict[str, list[str]] = {}
    for test in tests:
        for mod in sorted(own_items(probe, test, "modules")):
            if "." in mod or mod.startswith("_") or mod.startswith("test") or mod in TOOLING_TOPS:
                continue
            seen.setdefault(mod, []).append(test)
    out = [(m, ts) for m, ts in seen.items() if module_kind(probe, m) in kinds]
    return sorted(out, key=lambda item: (len(item[1]), item[0]))


# ---- commands the tests run -----------------------------------------------------------------


def resolve_command(probe: Probe, command: str) -> str | None:
    """The real regular file a command (absolute path or name on PATH) runs, or None."""
    if "/" in command:
        candidates = [command] if command.startswith("/") else []
    else:
        path = probe.env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        candidates = [f"{d.rstrip('/')}/{command}" for d in path.split(":") if d.startswith("/")]
    for candidate in candidates:
        real = probe.realpath(candidate)
        entry = probe.files.get(real)
        if entry is not None and entry.type == "f":
            return real
    return None


def executed_files(probe: Probe, tests: list[str]) -> list[tuple[str, str, list[str]]]:
    """Executable regular files (not the interpreter) that tests run: (command as run,
    real path, touching tests), narrowest first."""
    interpreter = probe.python.get("realpath", "")
    found: dict[str, tuple[str, list[str]]] = {}
    for test in tests:
        for command in sorted(own_items(probe, test, "commands")):
            real = resolve_command(probe, command)
            if real is None or real == interpreter or not int(probe.files[real].mode, 8) & 0o111:
                continue
            found.setdefault(real, (command, []))[1].append(test)
    out = [(command, real, touching) for real, (command, touching) in found.items()]
    return sorted(out, key=lambda item: (len(item[2]), item[1]))


# ---- the local wheelhouse -------------------------------------------------------------------

WHEEL_NAME = re.compile(r"^(?P<name>[^-/]+)-(?P<version>[^-/]+)(-\d[^-/]*)?-[^-/]+-[^-/]+-[^-/]+\.whl$")


def wheel_for(probe: Probe, dist: str, version: str) -> str | None:
    """The path of a wheel of ``dist`` at ``version`` somewhere in the gold image (a local
    wheelhouse, a wheel cache), or None: with one, ``pip install --no-index --find-links
    DIR`` reinstalls the distribution offline."""
    want = (canonicalize_name(dist), version)
    for path, entry in probe.files.items():
        if entry.type != "f" or not path.endswith(".whl"):
            continue
        m = WHEEL_NAME.match(path.rpartition("/")[2])
        if m and (canonicalize_name(m["name"]), m["version"]) == want:
            return path
    return None


def reinstall_line(probe: Probe, dist: str, version: str, wheel: str | None = None) -> str | None:
    """The shell line that reinstalls ``dist==version`` from the wheel in the image (``wheel``
    when the caller found it already), with the environment's own pip and no index; None
    when the image holds no such wheel."""
    wheel = wheel or wheel_for(probe, dist, version)
    if wheel is None:
        return None
    pip = f"{probe.python.get('prefix', '/opt/venv')}/bin/python -m pip"
    return (f"{pip} install --quiet --no-index --find-links {wheel.rpartition('/')[0]} "
            f"--force-reinstall --no-deps '{dist}=={version}'")
