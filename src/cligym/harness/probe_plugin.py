"""A pytest plugin run inside a throw-away probe container (never in a task image).

It records, per test and per test module, what the code under test touches: modules
imported, files opened (audit hook), shared objects newly mapped (/proc/self/maps),
environment variables read, subprocesses started, warnings and markers; and, at the end,
the installed distributions and interpreter facts. Output: JSON at $CLIGYM_PROBE_OUT.
"""

import json
import os
import sys

import pytest

_current = "session"  # outside any test or module: pytest start-up, conftest imports
_EXEC_LOG = "/tmp/cligym-probe-exec.log"
_touch = {}
_REC = {}  # scope -> {"files": set, "env": set, "commands": set, "dlopen": set}
_START_MODULES = set(sys.modules)


def _bucket(key):
    return _REC.setdefault(key, {"files": set(), "env": set(), "commands": set(), "dlopen": set()})


def _audit(event, args):
    if _current is None:
        return
    try:
        if event == "open":
            path = args[0]
            if isinstance(path, bytes):
                path = path.decode("utf-8", "replace")
            if isinstance(path, str) and path.startswith("/") and not path.startswith("/tmp/"):
                _bucket(_current)["files"].add(path)
        elif event in ("subprocess.Popen", "os.exec", "os.posix_spawn"):
            exe, argv = args[0], args[1]
            first = argv[0] if isinstance(argv, (list, tuple)) and argv else argv
            command = exe or first
            if isinstance(command, bytes):
                command = command.decode("utf-8", "replace")
            command = str(command)
            _bucket(_current)["commands"].add(command)
            # a forked child (e.g. the sh library) loses its memory: log to a file too
            with open(_EXEC_LOG, "a") as log:
                log.write(f"{_current}\t{command}\n")
        elif event == "ctypes.dlopen":
            _bucket(_current)["dlopen"].add(str(args[0]))
    except Exception:
        pass


sys.addaudithook(_audit)


def _note_env(key):
    if _current is not None:
        if isinstance(key, bytes):  # os.get_exec_path() asks for b"PATH"
            key = key.decode("utf-8", "replace")
        if isinstance(key, str):
            _bucket(_current)["env"].add(key)


class _RecordingEnviron(type(os.environ)):
    def __getitem__(self, key):
        _note_env(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        _note_env(key)
        return super().__contains__(key)


try:
    os.environ.__class__ = _RecordingEnviron
except TypeError:
    pass


def _maps():
    libs = set()
    try:
        with open("/proc/self/maps", "rb") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) >= 6 and b".so" in parts[-1]:
                    libs.add(parts[-1].decode("utf-8", "replace"))
    except OSError:
        pass
    return libs


class _Scope:
    def __init__(self, key):
        self.key = key

    def __enter__(self):
        global _current
        self.prev = _current
        _REC.pop(self.key, None)
        self.modules = set(sys.modules)
        self.libs = _maps()
        _current = self.key
        return self

    def __exit__(self, *exc):
        global _current
        _current = None
        rec = _bucket(self.key)
        entry = _touch.setdefault(self.key, {"modules": [], "files": [], "env": [], "commands": [], "libs": []})
        entry["modules"] = sorted(set(entry["modules"]) | (set(sys.modules) - self.modules))
        entry["files"] = sorted(set(entry["files"]) | rec["files"])
        entry["env"] = sorted(set(entry["env"]) | rec["env"])
        entry["commands"] = sorted(set(entry["commands"]) | rec["commands"])
        entry["libs"] = sorted(set(entry["libs"]) | (_maps() - self.libs) | rec["dlopen"])
        _current = self.prev
        return False


_warned = {}
_markers = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    if isinstance(collector, pytest.Module):
        key = "file:" + collector.nodeid
        with _Scope(key):
            outcome = yield
        _add_referenced_modules(collector, key)
    else:
        outcome = yield
    return outcome


def _add_referenced_modules(collector, key):
    """A module imported by an earlier test file is not re-imported by this one, so also
    credit this file with what its globals refer to: those packages (and their loaded
    submodules), and every module reached from them through module globals (what a
    shared helper such as tests/utils.py needed at import)."""
    try:
        namespace = vars(collector.obj)
    except Exception:
        return
    own = collector.obj.__name__
    others = own.rsplit(".", 1)[0] + ".test"  # the other test modules are not credited
    names = _refers_to(namespace)
    roots = {name.split(".")[0] for name in names}
    loaded = {m for m in list(sys.modules) if m.split(".")[0] in roots and not m.startswith(others)}
    loaded |= _reached(names, others)
    entry = _touch.setdefault(key, {"modules": [], "files": [], "env": [], "commands": [], "libs": []})
    entry["modules"] = sorted(set(entry["modules"]) | loaded)


_REFS = {}  # module name -> the module names its globals refer to


def _refers_to(namespace):
    """The modules a namespace's values come from. Only a value's type is asked first: an
    attribute of an arbitrary object may run code (a lazy proxy loads what it stands for)."""
    names = set()
    for value in list(namespace.values()):
        kind = type(value)
        try:
            if issubclass(kind, type(sys)):
                name = value.__name__
            elif issubclass(kind, type) or kind in (type(_refers_to), type(len)):
                name = value.__module__
            else:
                name = kind.__module__
        except Exception:
            continue
        if isinstance(name, str) and name and not name.startswith(("_pytest", "pytest", "builtins")):
            names.add(name)
    return names


def _reached(names, others):
    """The loaded modules reachable from ``names`` through module globals, with their
    parent packages (test modules other than the one collected left out)."""
    seen = set()
    stack = [n for n in names if n in sys.modules]
    while stack:
        name = stack.pop()
        if name in seen or name.startswith(others):
            continue
        seen.add(name)
        parent = name.rpartition(".")[0]
        if parent:
            stack.append(parent)
        if name not in _REFS:
            try:
                _REFS[name] = _refers_to(vars(sys.modules[name]))
            except Exception:
                _REFS[name] = set()
        stack.extend(n for n in _REFS[name] if n in sys.modules and n not in seen)
    return seen


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _markers[item.nodeid] = sorted({m.name for m in item.iter_markers()})
    with _Scope(item.nodeid):
        yield


def pytest_warning_recorded(warning_message, when, nodeid, location):
    if nodeid:
        _warned.setdefault(nodeid, set()).add(warning_message.category.__name__)


def _dists():
    from importlib import metadata

    out = []
    for dist in metadata.distributions():
        path = getattr(dist, "_path", None)
        eps = []
        try:
            eps = [{"name": ep.name, "group": ep.group, "value": ep.value} for ep in dist.entry_points]
        except Exception:
            pass
        top = (dist.read_text("top_level.txt") or "").split()
        files = []
        try:
            files = [str(f) for f in (dist.files or [])]
        except Exception:
            pass
        out.append({
            "name": dist.metadata["Name"], "version": dist.version,
            "path": str(path) if path else None, "top_level": top,
            "entry_points": eps, "files": files[:5000],
        })
    return out


def pytest_sessionfinish(session, exitstatus):
    import site
    import ssl
    import sysconfig

    modules = {}
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if path:
            modules[name] = os.path.realpath(path)
    try:
        with open(_EXEC_LOG) as log:
            for line in log:
                key, _, command = line.rstrip("\n").partition("\t")
                if key in _touch and command:
                    _touch[key]["commands"] = sorted(set(_touch[key]["commands"]) | {command})
    except OSError:
        pass
    scoped_modules = set().union(*(set(e["modules"]) for e in _touch.values())) if _touch else set()
    scoped_libs = set().union(*(set(e["libs"]) for e in _touch.values())) if _touch else set()
    rec = _bucket("session")
    _touch["session"] = {
        "modules": sorted(set(sys.modules) - _START_MODULES - scoped_modules),
        "files": sorted(rec["files"]), "env": sorted(rec["env"]), "commands": sorted(rec["commands"]),
        "libs": sorted((_maps() - scoped_libs) | rec["dlopen"]),
    }
    tests = {}
    for key, entry in _touch.items():
        if not key.startswith("file:") and key != "session":
            entry["warnings"] = sorted(_warned.get(key, ()))
            entry["markers"] = _markers.get(key, [])
            entry["file"] = "file:" + key.split("::")[0]
        tests[key] = entry
    try:
        verify_paths = ssl.get_default_verify_paths()._asdict()
    except Exception:
        verify_paths = {}
    inifile = getattr(session.config, "inipath", None)
    data = {
        "touch": tests,
        "modules": modules,
        "libs": sorted(_maps()),
        "dists": _dists(),
        "python": {
            "executable": sys.executable,
            "realpath": os.path.realpath(sys.executable),
            "prefix": sys.prefix,
            "base_prefix": sys.base_prefix,
            "version": "%d.%d" % sys.version_info[:2],
            "stdlib": sysconfig.get_paths()["stdlib"],
            "platstdlib": sysconfig.get_paths()["platstdlib"],
            "site_packages": site.getsitepackages(),
            "path": sys.path,
        },
        "ssl": verify_paths,
        "inifile": str(inifile) if inifile else None,
        "rootdir": str(session.config.rootpath),
        "env": dict(os.environ),
    }
    with open(os.environ.get("CLIGYM_PROBE_OUT", "/tmp/cligym-probe.json"), "w") as handle:
        json.dump(data, handle)
