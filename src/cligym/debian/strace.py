"""Reading strace's per-process traces (``strace -ff -y -o DIR/trace``) of one autopkgtest
test: what its processes executed, opened, looked up and listed. Pure: text in, paths out.

The traces come from ``strace -ff -qq -y -s 1024 -e signal=none -e abbrev=!execve`` (one file
per process, ``trace.PID``; ``-y`` decorates every fd, ``AT_FDCWD`` included, with the path
it stands for, so an opened file's name is the kernel's: absolute and resolved). A path a
process names relative to its working directory (``execve("./t")``, ``stat("x")``) is made
absolute with the working directory the process had: its parent's at the fork, then its own
``chdir``/``fchdir`` and the ``AT_FDCWD</dir>`` decorations it shows.

Only the test's own processes count: the one that opens the test's ``<results>/NAME.stdout``
(the runner's subshell for the test) and its descendants; the runner's helpers (mktemp, cat,
awk ...) are not the test's.
"""

from __future__ import annotations

import codecs
import posixpath
import re
from dataclasses import dataclass, field

#: One syscall line: name, arguments, return value (with its fd decoration), errno.
LINE = re.compile(r"^(?P<name>[a-z0-9_]+)\((?P<args>.*)\)\s+= (?P<ret>-?\d+|\?)(?:<(?P<fd>.*)>)?"
                  r"(?: (?P<err>E[A-Z0-9]+) \(.*\))?$")
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"(\.\.\.)?')
DIRFD = re.compile(r"^(?:AT_FDCWD|-?\d+)(?:<(?P<path>[^>]*)>)?, ")
OPENS = {"open", "openat", "openat2", "creat"}
LOOKUPS = {"stat", "lstat", "newfstatat", "statx", "access", "faccessat", "faccessat2"}
EXECS = {"execve", "execveat"}
FORKS = {"clone", "clone3", "fork", "vfork"}
AT_CALLS = {"openat", "openat2", "newfstatat", "statx", "faccessat", "faccessat2", "execveat"}
SHARED_OBJECT = re.compile(r"\.so(\.[0-9]+)*$|\.so$")


@dataclass
class Event:
    """One syscall that matters here. ``path``: absolute (lexically normalised) as the
    process named it; ``real``: the opened fd's path (``-y``), when there is one."""

    kind: str  # exec, open, folder, lookup, missing, chdir, fork
    path: str = ""
    real: str = ""
    argv0: str = ""
    child: int = 0
    env: dict[str, str] | None = None


@dataclass
class Touched:
    """What one test's processes touched (sets of absolute paths)."""

    files: set[str] = field(default_factory=set)  # opened (the kernel's resolved name)
    folders: set[str] = field(default_factory=set)  # opened as directories (listed)
    programs: dict[str, str] = field(default_factory=dict)  # executed path -> first argv
    lookups: set[str] = field(default_factory=set)  # stat/access that succeeded, as named
    missing: set[str] = field(default_factory=set)  # opened or looked up: ENOENT, as named
    processes: int = 0
    env: dict[str, str] = field(default_factory=dict)  # the test's first program's environment


def unescape(text: str) -> str:
    """A C string as strace prints it (``\\"``, ``\\n``, octal and hex escapes)."""
    if "\\" not in text:
        return text
    raw = codecs.escape_decode(text.encode("utf-8", "surrogateescape"))[0]
    assert isinstance(raw, bytes)
    return raw.decode("utf-8", "surrogateescape")


def absolute(path: str, base: str) -> str:
    """``path`` made absolute against ``base`` and normalised lexically."""
    joined = path if path.startswith("/") else posixpath.join(base or "/", path)
    return "/" + posixpath.normpath(joined).lstrip("/")


def _strings(text: str) -> list[str]:
    return [unescape(m.group(1)) for m in STRING.finditer(text)]


def _exec_event(name: str, args: str, base: str) -> Event:
    rest = DIRFD.sub("", args, count=1) if name == "execveat" else args
    first = STRING.match(rest)
    path = unescape(first.group(1)) if first else ""
    rest = rest[first.end():] if first else rest
    arrays = re.findall(r"\[((?:\"(?:[^\"\\]|\\.)*\"(?:\.\.\.)?|[^\]\"])*)\]", rest)
    argv = _strings(arrays[0]) if arrays else []
    env = None
    if len(arrays) > 1:
        env = dict(item.partition("=")[::2] for item in _strings(arrays[1]))
    return Event("exec", absolute(path, base), argv0=argv[0] if argv else "", env=env)


def parse_line(line: str, cwd: str) -> Event | None:
    """The event of one trace line for a process whose working directory is ``cwd``
    (None: a line of no interest, a failed call other than ENOENT, or not a syscall)."""
    match = LINE.match(line.rstrip("\n"))
    if not match:
        return None
    name, args, ret, fd, err = match.group("name", "args", "ret", "fd", "err")
    ok = ret != "?" and int(ret) >= 0
    if name in FORKS:
        return Event("fork", child=int(ret)) if ok and int(ret) > 0 else None
    if name in EXECS:
        return _exec_event(name, args, cwd) if ok else None
    if name == "fchdir":
        decorated = re.match(r"^-?\d+<([^>]*)>", args)
        return Event("chdir", path=decorated.group(1)) if ok and decorated else None
    base = cwd
    if name in AT_CALLS:
        dirfd = DIRFD.match(args)
        if dirfd is None:
            return None
        base = dirfd.group("path") or cwd
        args = args[dirfd.end():]
    first = STRING.match(args)
    if first is None or (not first.group(1) and name in AT_CALLS):  # AT_EMPTY_PATH: an fstat
        return None
    path = absolute(unescape(first.group(1)), base)
    if name == "chdir":
        return Event("chdir", path=path) if ok else None
    if name not in OPENS and name not in LOOKUPS:
        return None
    if not ok:
        return Event("missing", path=path) if err == "ENOENT" else None
    if name in LOOKUPS:
        return Event("lookup", path=path)
    kind = "folder" if "O_DIRECTORY" in args else "open"
    return Event(kind, path=path, real=fd or path)


def cwd_hint(line: str) -> str:
    """The working directory an ``AT_FDCWD</dir>`` decoration shows, or ''."""
    found = re.search(r"\(AT_FDCWD<([^>]*)>", line)
    return found.group(1) if found else ""


@dataclass
class Process:
    pid: int
    lines: list[str]


def _events(process: Process, cwd: str) -> list[tuple[Event, str]]:
    """Each event of a process with the working directory it happened in."""
    out = []
    for line in process.lines:
        cwd = cwd_hint(line) or cwd
        event = parse_line(line, cwd)
        if event is None:
            continue
        if event.kind == "chdir":
            cwd = event.path
        out.append((event, cwd))
    return out


def _walk(processes: dict[int, Process], marker: str, workdir: str) -> tuple[dict[int, str], int | None]:
    """(the starting working directory of each process reached, the test's top process):
    the tree walked from the roots (processes no other forked), each process starting where
    its parent was at the fork; the top is the process whose trace opens ``marker`` (the
    test's stdout file) for writing."""
    top = None
    for pid, process in processes.items():
        if top is None and any(f'"{marker}", O_WRONLY|O_CREAT' in line for line in process.lines[:200]):
            top = pid
    children = {child for pid in processes for child in _children(processes[pid])}
    roots = [pid for pid in sorted(processes) if pid not in children]
    start: dict[int, str] = {}
    todo = [(root, workdir) for root in roots]
    while todo:
        pid, cwd = todo.pop()
        if pid in start or pid not in processes:
            continue
        start[pid] = cwd
        for event, at in _events(processes[pid], cwd):
            if event.kind == "fork":
                todo.append((event.child, at))
    return start, top


def _children(process: Process) -> list[int]:
    return [int(m.group(1)) for line in process.lines
            if line.startswith(tuple(FORKS)) and (m := re.search(r"\)\s+= (\d+)$", line))]


def touched(traces: dict[int, str], marker: str, workdir: str) -> Touched:
    """What the test's processes touched, from ``traces`` (pid -> trace text); ``marker``
    is the test's stdout file (absolute), ``workdir`` where the runner started."""
    processes = {pid: Process(pid, text.splitlines()) for pid, text in traces.items()}
    start, top = _walk(processes, marker, workdir)
    mine = _descendants(processes, start, top) if top is not None else set(start)
    out = Touched(processes=len(mine))
    for pid in sorted(mine):
        for event, _ in _events(processes[pid], start[pid]):
            _add(out, event, first_exec=pid == top)
    return out


def _descendants(processes: dict[int, Process], start: dict[int, str], top: int) -> set[int]:
    mine, todo = set(), [top]
    while todo:
        pid = todo.pop()
        if pid in mine or pid not in processes:
            continue
        mine.add(pid)
        todo.extend(_children(processes[pid]))
    return mine & set(start)


def _add(out: Touched, event: Event, first_exec: bool) -> None:
    if event.kind == "exec":
        out.programs.setdefault(event.path, event.argv0)
        if first_exec and not out.env and event.env:
            out.env = event.env
    elif event.kind == "open":
        out.files.add(event.real)
    elif event.kind == "folder":
        out.folders.add(event.real)
    elif event.kind == "lookup":
        out.lookups.add(event.path)
    elif event.kind == "missing":
        out.missing.add(event.path)


def is_shared_object(path: str) -> bool:
    return bool(SHARED_OBJECT.search(posixpath.basename(path)))


def is_noise(path: str, ignored: tuple[str, ...]) -> bool:
    """A path no operator would target: the kernel's and the devices' file systems, the
    runner's own files and the probe's (``ignored``: folder prefixes)."""
    return path == "/" or any(path == p or path.startswith(p.rstrip("/") + "/")
                              for p in ("/proc", "/sys", "/dev", *ignored))
