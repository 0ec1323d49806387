"""Probe a Debian gold environment: what does each of its autopkgtest tests touch?

One throw-away container of the gold image (network none, as every container cligym
starts) gets strace, downloaded on the host for the image's own dpkg status and installed
there with ``dpkg -i`` (in that container only: the gold image is unchanged). Each
autopkgtest test then runs alone under ``strace -ff`` around cligym's runner (debtest.sh
selects a whole test by its name); the per-process traces are read back and parsed on the
host (``cligym.debian.strace``). Then the image-wide facts about the paths found: the
packages owning them (``dpkg-query -S``, batched), those packages' conffiles, the
alternatives, the diversions and the dynamic linker's cache entries of the mapped objects.

What is left out: the kernel's and the devices' file systems (/proc, /sys, /dev), the
runner's own files (/opt/cligym), the probe's and the results' folders, the runner's own
helper processes, and every file the test made itself (not in the gold image: nothing an
operator could break). Lookups that found nothing (ENOENT) are search noise but for two
kinds kept in ``missing``: a shared object's name and a path under the workdir, each in a
folder the image has: a file put there would be picked up first (a shadowing library, a
local configuration the tests read), the Debian world's shadow targets.
"""

from __future__ import annotations

import io
import json
import posixpath
import re
import tarfile
import tempfile
import time
from pathlib import Path

from cligym.config import DebianImage, home
from cligym.debian import deb822, dpkg_facts
from cligym.debian.archive import AptState
from cligym.debian.strace import Touched, is_noise, is_shared_object, touched
from cligym.errors import CligymError
from cligym.models.debian_probe import DebianProbe, DebianTouch, Program
from cligym.models.gold import GoldEnv
from cligym.runtime import Runtime, Session

#: What the probe installs in its container (and apt adds what it needs).
TRACER = ("strace",)
PROBE_DIR = "/tmp/cligym-probe"
SYSCALLS = ("execve,execveat,open,openat,openat2,creat,stat,lstat,newfstatat,statx,access,faccessat,faccessat2,"
            "chdir,fchdir,clone,clone3,fork,vfork")
#: -ff: a file per process; -y: fds (AT_FDCWD too) decorated with their paths; -s: whole
#: argument and environment strings; abbrev=!execve: execve's environment printed.
STRACE = ("strace", "-ff", "-qq", "-y", "-s", "1024", "-e", "signal=none", "-e", "abbrev=!execve",
          "-e", f"trace={SYSCALLS}")
#: Run in the container with its python3: each path -> [its real path or None, its folder
#: exists, it is a folder].
RESOLVE = (
    "import json, os, sys\n"
    "paths = json.load(open(sys.argv[1]))\n"
    "out = {p: [os.path.realpath(p) if os.path.exists(p) else None, os.path.isdir(os.path.dirname(p)),"
    " os.path.isdir(p)] for p in paths}\n"
    "json.dump(out, open(sys.argv[2], 'w'))\n"
)
SETUP_TIMEOUT = 600.0


def probe_debian(runtime: Runtime, gold: GoldEnv, state: AptState | None = None, *,
                 timeout: float = 1800.0) -> DebianProbe:
    """Trace each autopkgtest test of ``gold`` (``timeout`` seconds each) and record what
    it touched, with the image's dpkg facts about those paths."""
    started = time.monotonic()
    state = state or AptState()
    scratch = home() / "build"
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as tmp, runtime.session(gold.image, workdir=gold.workdir) as session:
        tracer = _install_tracer(session, state, Path(tmp))
        names = autopkgtest_names(_read(session, DebianImage.TESTS).decode(errors="replace"), gold.tests)
        if not names:
            raise CligymError(f"the gold image {gold.image} lists no autopkgtest test to probe")
        traced = {name: _trace(session, gold, name, index, timeout) for index, name in enumerate(names)}
        probe = _record(session, gold, traced, tracer)
    probe.seconds = round(time.monotonic() - started, 1)
    return probe


def autopkgtest_names(tests_tsv: str, gold_tests: list[str]) -> list[str]:
    """The autopkgtest tests of the runner's list, those the gold test ids name (all when
    there are no ids), in the list's order."""
    listed = [line.split("\t", 1)[0] for line in tests_tsv.splitlines() if line.strip() and not line.startswith("#")]
    wanted = {test.split("::", 1)[0] for test in gold_tests}
    return [name for name in listed if not wanted or name in wanted]


def results_file(name: str) -> str:
    """The runner's base name for a test's results (debtest.sh's ``tr -c``)."""
    return re.sub(r"[^A-Za-z0-9._+@:-]", "_", name)


def _read(session: Session, path: str) -> bytes:
    data = session.get_file(path)
    if data is None:
        raise CligymError(f"the probe's container has no {path}")
    return data


def _exec(session: Session, command: str | list[str], what: str, timeout: float = SETUP_TIMEOUT) -> str:
    result = session.exec(command, timeout=timeout)
    if not result.ok:
        raise CligymError(f"{what} failed in the probe's container: {result.output.strip()[-300:]}")
    return result.output


def _install_tracer(session: Session, state: AptState, tmp: Path) -> list[str]:
    """Download strace and what it needs for the container's dpkg status, and install it
    there (only there); the packages installed."""
    status = tmp / "status"
    status.write_bytes(_read(session, DebianImage.DPKG_STATUS))
    debs = state.download_debs(list(TRACER), status, dest=tmp / "debs")
    _exec(session, ["mkdir", "-p", PROBE_DIR], "mkdir")
    if debs:
        session.upload_dir(tmp / "debs", f"{PROBE_DIR}/debs")
        paths = [f"{PROBE_DIR}/debs/{Path(deb.path).name}" for deb in debs]
        _exec(session, ["dpkg", "-i", *paths], "dpkg -i strace")
        _exec(session, ["rm", "-rf", f"{PROBE_DIR}/debs"], "rm")
    _exec(session, ["strace", "-V"], "strace -V")
    return [deb.package for deb in debs]


def _trace(session: Session, gold: GoldEnv, name: str, index: int, timeout: float) -> tuple[Touched, DebianTouch]:
    """Run one test under strace; what it touched (raw) and its run (exit code, seconds)."""
    traces, results = f"{PROBE_DIR}/trace-{index}", f"{PROBE_DIR}/results-{index}"
    _exec(session, ["mkdir", "-p", traces], "mkdir")
    result = session.exec([*STRACE, "-o", f"{traces}/trace", gold.test_command, name], timeout=timeout,
                          workdir=gold.workdir, env={"DEBTEST_RESULTS": results})
    if result.timed_out:
        raise CligymError(f"the test {name} did not finish under strace in {timeout:.0f} s")
    _exec(session, ["tar", "-C", traces, "-czf", f"{traces}.tgz", "."], "tar")
    texts = read_traces(_read(session, f"{traces}.tgz"))
    _exec(session, ["rm", "-rf", traces, f"{traces}.tgz"], "rm")
    if not texts:  # strace could not trace (ptrace refused): no record rather than an empty one
        raise CligymError(f"strace traced nothing of the test {name}: {result.output.strip()[-300:]}")
    raw = touched(texts, f"{results}/{results_file(name)}.stdout", gold.workdir)
    raw.env.pop("DEBTEST_RESULTS", None)
    return raw, DebianTouch(processes=raw.processes, exit_code=result.exit_code, seconds=round(result.seconds, 1))


def read_traces(tgz: bytes) -> dict[int, str]:
    """pid -> trace text of a gzipped tar of ``trace.PID`` files."""
    texts = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
            for member in tar:
                stem, _, pid = Path(member.name).name.partition(".")
                handle = tar.extractfile(member) if member.isfile() else None
                if stem == "trace" and pid.isdecimal() and handle is not None:
                    texts[int(pid)] = handle.read().decode("utf-8", "surrogateescape")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise CligymError(f"the probe's traces cannot be read: {exc}") from exc
    return texts


def _record(session: Session, gold: GoldEnv, traced: dict[str, tuple[Touched, DebianTouch]],
            tracer: list[str]) -> DebianProbe:
    """The probe record: the raw traces filtered against the image, and its dpkg facts."""
    added = {change.path for change in session.diff() if change.kind == "A"}
    ignored = (DebianImage.CLIGYM, PROBE_DIR)
    ldconfig = dpkg_facts.parse_ldconfig(_exec(session, ["ldconfig", "-p"], "ldconfig -p"))
    asked = {p for raw, _ in traced.values()
             for p in [*raw.files, *raw.folders, *raw.programs, *raw.lookups, *raw.missing,
                       *(posixpath.dirname(m) for m in raw.missing)]}
    resolved = _resolve(session, gold, asked | {path for _, path in ldconfig})
    named: dict[str, set[str]] = {}
    tests = {}
    for name, (raw, run) in traced.items():
        tests[name] = touch_of(raw, run, resolved, lambda p: is_noise(p, ignored) or _made(p, added),
                               gold.workdir, named)
    probe = DebianProbe(gold_image_id=gold.image_id, workdir=gold.workdir, tests=tests,
                        env=next((raw.env for raw, _ in traced.values() if raw.env), {}), tracer=tracer)
    folders = {real for answer in resolved.values() if answer[2] and (real := answer[0])}
    _dpkg(session, probe, named, folders | {f for touch in tests.values() for f in touch.folders}, gold.source.name)
    objects = {o for touch in tests.values() for o in touch.objects}
    for entry, path in ldconfig:
        real = (resolved.get(path) or [None])[0]
        if real in objects:
            probe.ldconfig.setdefault(real, []).append(f"{entry} => {path}")
    return probe


def _made(path: str, added: set[str]) -> bool:
    """Whether ``path`` (or a folder above it) was added to the container after it started."""
    while path not in ("/", ""):
        if path in added:
            return True
        path = posixpath.dirname(path)
    return False


def _resolve(session: Session, gold: GoldEnv, paths: set[str]) -> dict[str, list]:
    """path -> [real path or None, whether its folder exists, whether it is a folder],
    asked of the container."""
    ask, answer = f"{PROBE_DIR}/resolve-in.json", f"{PROBE_DIR}/resolve-out.json"
    session.put_files({ask: json.dumps(sorted(paths)), f"{PROBE_DIR}/resolve.py": RESOLVE})
    _exec(session, [gold.python, f"{PROBE_DIR}/resolve.py", ask, answer], "resolving the paths")
    try:
        found: dict[str, list] = json.loads(_read(session, answer))
    except ValueError as exc:
        raise CligymError(f"the probe's container answered no paths: {exc}") from exc
    return found


def touch_of(raw: Touched, run: DebianTouch, resolved: dict[str, list], dropped, workdir: str,
             named: dict[str, set[str]]) -> DebianTouch:
    """One test's record from its raw trace: paths resolved, the image's kept (``dropped``:
    noise or made by the tests), sorted; ``named`` gathers the names each path was reached by."""
    def real(path: str) -> str | None:
        got = (resolved.get(path) or [None])[0]
        return None if got is None or dropped(got) else got

    files = {target for f in raw.files if (target := real(f)) is not None}
    programs = {}
    for path, argv0 in raw.programs.items():
        target = real(path)
        if target is not None and not dropped(path):
            programs[path] = Program(path=path, real=target, argv0=argv0)
            named.setdefault(target, set()).add(path)
    lookups = {target for p in raw.lookups if (target := real(p)) is not None}
    for path in raw.lookups:
        if (target := real(path)) is not None:
            named.setdefault(target, set()).add(path)
    opened = files | {real(f) for f in raw.folders}
    missing = {m for m in raw.missing
               if (is_shared_object(m) or m.startswith(workdir.rstrip("/") + "/")) and not dropped(m)
               and (resolved.get(m) or [None, False])[0] is None and (resolved.get(posixpath.dirname(m)) or [None])[0]}
    shadows = search_misses({m for m in raw.missing if not dropped(m) and (resolved.get(m) or [None])[0] is None},
                            files)
    return run.model_copy(update={
        "shadows": shadows,
        "files": sorted(f for f in files if not is_shared_object(f)),
        "objects": sorted(f for f in files if is_shared_object(f)),
        "folders": sorted({target for f in raw.folders if (target := real(f)) is not None}),
        "programs": sorted(programs.values(), key=lambda p: p.path),
        "lookups": sorted(lookups - opened - {p.real for p in programs.values()}),
        "missing": sorted(missing),
    })


def search_misses(missing: set[str], opened: set[str]) -> dict[str, str]:
    """Each path of ``missing`` whose name ends as one of ``opened`` does -> that file: the
    same last two names (a module's folder and file), or the same file name with an
    extension (``strict.pm``, ``libyaml-0.so.2``). A search that missed the first and found
    the second would find a file put at the first."""
    by_tail: dict[str, str] = {}
    for path in sorted(opened):
        parts = path.rsplit("/", 2)
        if len(parts) == 3:
            by_tail.setdefault("/".join(parts[1:]), path)
        if "." in parts[-1].strip("."):
            by_tail.setdefault(parts[-1], path)
    found = {}
    for path in sorted(missing):
        parts = path.rsplit("/", 2)
        hit = by_tail.get("/".join(parts[1:])) if len(parts) == 3 else None
        hit = hit or ("." in parts[-1].strip(".") and by_tail.get(parts[-1])) or None
        if hit is not None and hit != path:
            found[path] = hit
    return found


def _dpkg(session: Session, probe: DebianProbe, named: dict[str, set[str]], folders: set[str], source: str) -> None:
    """The owners of every path (the tracer's packages are not the image's), the versions
    and conffiles of the packages owning a path that is no folder (a folder like /usr/lib
    has hundreds), which of them ``source`` built, the alternatives and the diversions,
    asked of the container's dpkg."""
    paths = sorted(probe.paths())
    ask = sorted({a for p in paths for n in [p, *named.get(p, ())] for a in dpkg_facts.aliases(n)
                  if dpkg_facts.queryable(a)})
    listed = f"{PROBE_DIR}/owners-in"
    session.put_files({listed: "\0".join(ask)})
    owners_text = _exec(session, ["sh", "-c", f"xargs -0 -r -n 500 dpkg-query -S < {listed} 2>/dev/null; true"],
                        "dpkg-query -S")
    owners = dpkg_facts.parse_owners(owners_text)
    tracer = set(probe.tracer)
    probe.owners = {p: [q for q in dpkg_facts.owner_of(p, sorted(named.get(p, ())), owners)
                        if q.split(":")[0] not in tracer] for p in paths}
    packages = sorted({q for p, pkgs in probe.owners.items() if p not in folders for q in pkgs})
    if packages:
        text = _exec(session, ["dpkg-query", "-W", "-f", dpkg_facts.QUERY_FORMAT, *packages], "dpkg-query -W")
        found = dpkg_facts.parse_packages(text)
        probe.versions, probe.conffiles, probe.core = found.versions, found.conffiles, sorted(found.core)
        probe.of_source = sorted(p for p, built_from in found.sources.items() if built_from == source)
    index = session.get_file(f"{DebianImage.APT_REPO}/Packages") or b""
    probe.repository = {deb822.field(stanza, "Package"): deb822.field(stanza, "Version")
                        for stanza in deb822.parse(index.decode(errors="replace")) if deb822.field(stanza, "Package")}
    probe.alternatives = dpkg_facts.parse_alternatives(
        _exec(session, ["update-alternatives", "--get-selections"], "update-alternatives"))
    probe.diversions = dpkg_facts.parse_diversions(_exec(session, ["dpkg-divert", "--list"], "dpkg-divert"))
