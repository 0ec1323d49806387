"""The gold reference: what a task's verifier trusts, taken from gold, shipped in ``tests/``.

A verifier that runs the task's tests with whatever the agent left in the image can be
talked into a reward: a conftest hook, a ``python`` that exits 0, a patched package the
tests import, a new module the standard library looks for, a planted ``.pyc``, a hidden
``.pth``, a process writing the reward file. So at export time (and at invert time, to
throw out states the verifier would repair by itself) this module reads from a container
of the gold image, with network none, what decides how the tests run:

- pristine copies of the task's test files, conftests and pytest configuration
  (``pristine.tar``), and where such files did *not* exist in gold;
- the fingerprint: the interpreter and its link chain, the standard library, every site
  directory whole (every distribution, the project's own included, every top-level name,
  every ``.pth``), every folder on PATH, ``pyvenv.cfg``, every shared object the test
  process maps and the library folders they come from; listed by ``scripts/fingerprint.sh``, the same
  code the verifier runs, so the two listings compare line by line;
- the project's own files (the workdir), which must be gold's, its package folders (no new
  module may appear there), and each folder on ``sys.path`` as gold had it (no new
  importable entry may appear there);
- how the dynamic loader resolves every extension module's libraries, and the program
  loader and where it looks (``scripts/read_loader.py``);
- pip's configuration as pip reads it (``m_pipconf``), which a repair must leave as gold's;
- gold's pytest plugins, and how gold's pytest names each node id in its JUnit report.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from pydantic import ValidationError

from cligym.errors import CligymError
from cligym.harness.bundle import script
from cligym.harness.busybox import busybox_sh, lines_of, put_functions
from cligym.harness.debian_reference import gather_debian
from cligym.layout import ReferenceStore
from cligym.models.io import write_atomic
from cligym.models.reference import GoldReference, JunitKey, SystemState
from cligym.runtime import Runtime, Session

_T = TypeVar("_T")

# in-container scratch places of the gold container (never in a task image)
_READER, _ARGS = "/tmp/cligym-read-reference.py", "/tmp/cligym-args.json"
_SPEC, _LIST, _TAR = "/tmp/cligym-spec.txt", "/tmp/cligym-list.txt", "/tmp/cligym-pristine.tar"
_BYTECODE = "/tmp/cligym-bytecode.txt"
_READER_OUT, _SITES = "/tmp/cligym-reference.json", "/tmp/cligym-sites.txt"
_LOADER_READER, _LOADER_OUT = "/tmp/cligym-read-loader.py", "/tmp/cligym-loader.json"


def _interpreter(session: Session, workdir: str, test_command: str) -> tuple[str, str]:
    """(what the test command's first word resolves to, the Python interpreter it runs)."""
    first = shlex.split(test_command)[0]
    found = busybox_sh(session, 'cd "$1" && command -v "$2"', workdir, first)
    path = found.output.strip().splitlines()[-1] if found.ok and found.output.strip() else ""
    if not path.startswith("/"):
        raise CligymError(f"the test command's {first!r} is not found in the gold image")
    if re.fullmatch(r"python[0-9.]*", path.rsplit("/", 1)[-1]):
        return path, path
    head = (session.get_file(path) or b"").split(b"\n", 1)[0].decode("utf-8", "replace")
    words = head[2:].split() if head.startswith("#!") else []
    if words and words[0].endswith("/env") and len(words) > 1:
        found = busybox_sh(session, 'command -v "$1"', words[1])
        words = [found.output.strip()]
    if not words or not words[0].startswith("/"):
        raise CligymError(f"cannot tell which Python the test command's {first!r} runs in the gold image")
    return path, words[0]


def _rootdir(session: Session, image: str, workdir: str, test_command: str,
             ids: list[str]) -> tuple[str, str | None]:
    """Gold's pytest rootdir and configuration file for these node ids, kept by the folders
    of their files (``_KEPT``)."""
    folders = sorted({posixpath.dirname(i.split("::", 1)[0]) for i in ids})
    return _kept(image, f"rootdir of {test_command}", [workdir, *folders],
                 lambda: _collect_rootdir(session, workdir, test_command, ids))


def _collect_rootdir(session: Session, workdir: str, test_command: str, ids: list[str]) -> tuple[str, str | None]:
    command = f'cd "$1" && shift && {test_command} --collect-only -p no:cacheprovider "$@"'
    run = busybox_sh(session, command, workdir, *ids, timeout=900)
    root = re.search(r"^rootdir: (.+?)\s*$", run.output, re.M)
    if not root:
        raise CligymError(f"gold's pytest printed no rootdir: {run.output.strip()[-200:]!r}")
    rootdir = root.group(1).split(",")[0].strip()
    config = re.search(r"^configfile: (\S+)", run.output, re.M)
    inifile = None
    if config:
        name = config.group(1)
        inifile = name if name.startswith("/") else f"{rootdir.rstrip('/')}/{name}"
    return rootdir, inifile


def _read_json(session: Session, path: str, what: str) -> dict:
    try:
        return json.loads(session.get_file(path) or b"")
    except ValueError:
        raise CligymError(f"could not read {what} from the gold image") from None


#: What a gold image says that a sample of its tests does not change, by (gold image, what,
#: its inputs): a gold image (its tag is a content hash) never changes, so every candidate
#: and task of one gold shares one reading. Hashing the interpreter, the standard library
#: and the site directories (the fingerprint) is the costly part of a reference; its
#: interpreter, site directories and where its loader looks are one program each; its
#: pytest rootdir and configuration file are a collection, which pytest finds from the
#: common ancestor of its arguments' folders (a node id's file is what comes before its
#: first ``::``; a file argument stands for its folder), so they are kept by the folders
#: of the sample's files.
_KEPT: dict[tuple[str, str, tuple[str, ...]], Any] = {}


def _kept(image: str, what: str, inputs: Iterable[str], read: Callable[[], _T]) -> _T:
    """``read()``, once per (``image``, ``what``, ``inputs``): ``_KEPT``."""
    key = (image, what, tuple(inputs))
    if key not in _KEPT:
        _KEPT[key] = read()
    return _KEPT[key]


def _listing(session: Session, image: str, what: str, inputs: list[str], command: str,
             empty: bool = False) -> list[str]:
    """``lines_of`` in the gold container, kept (``_kept``)."""
    return list(_kept(image, what, inputs,
                      lambda: lines_of(session, f"could not list the gold {what}", command, empty=empty)))


def pip_config(session: Session, prefix: str) -> list[str]:
    """pip's configuration in ``session``'s container as the verifier sees it (fingerprint.sh's
    ``m_pipconf``): the lines a repaired container must share with gold's."""
    put_functions(session)
    return lines_of(session, "could not read pip's configuration", 'm_pipconf "$1"', prefix, empty=True)


@functools.lru_cache(maxsize=8)
def gold_pip_config(runtime: Runtime, image: str, python: str) -> tuple[str, tuple[str, ...]]:
    """(gold's sys.prefix, pip's configuration in gold) read once per gold image (whose tag
    names its content) from a container of it."""
    with runtime.session(image) as session:
        run = session.exec([python, "-I", "-c", "import sys; print(sys.prefix)"], timeout=120)
        lines = run.output.strip().splitlines()
        if not run.ok or not lines or not lines[-1].startswith("/"):
            raise CligymError(f"could not read gold's prefix: {run.output.strip()[-200:]}")
        return lines[-1], tuple(pip_config(session, lines[-1]))


def _site_dirs(session: Session, interpreter: str) -> list[str]:
    """The site directories of gold's interpreter that exist: the S entries the reader will
    list (``read_reference.py``), known before anything runs the tests."""
    code = ("import json, os, site; print(json.dumps(sorted({os.path.normpath(p) for p in "
            "[*site.getsitepackages(), site.getusersitepackages()] if os.path.isdir(p)})))")
    run = session.exec([interpreter, "-I", "-c", code], timeout=120)
    try:
        return list(json.loads(run.output.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        raise CligymError(f"could not read gold's site directories: {run.output.strip()[-200:]}") from None


def _loader_places(session: Session, interpreter: str) -> dict:
    """What read_loader.py says: where the kernel and the dynamic loader look besides the
    mapped objects (with gold's interpreter)."""
    run = session.exec([interpreter, "-I", _LOADER_READER, interpreter, _LOADER_OUT], timeout=300)
    if not run.ok:
        raise CligymError(f"could not read where gold's loader looks: {run.output.strip()[-200:]}")
    return _read_json(session, _LOADER_OUT, "where the loader looks")


def _read_reference(session: Session, image: str, interpreter: str, args: dict) -> dict:
    """What read_reference.py says, given what read_loader.py says first (``_loader_places``,
    kept: it reads nothing of the tests)."""
    places = _kept(image, "loader places", [interpreter], lambda: _loader_places(session, interpreter))
    args = {**args, "loader_places": places}
    session.put_files({_ARGS: json.dumps({**args, "out": _READER_OUT})})
    run = session.exec(["sh", "-c", f'cd "$1" && {interpreter} -I {_READER} {_ARGS}', "cligym", args["workdir"]],
                       timeout=900)
    if not run.ok:
        raise CligymError(f"could not read the gold reference from the gold image: {run.output.strip()[-200:]}")
    return _read_json(session, _READER_OUT, "the gold reference")


def gather(
    runtime: Runtime, image: str, *, instance_id: str, workdir: str, test_command: str,
    f2p: list[str], p2p: list[str], order: list[str], state: SystemState | None = None,
    store: ReferenceStore | None = None,
) -> tuple[GoldReference, bytes]:
    """The gold reference of a task and its pristine files (a tar), read from ``image`` (a
    gold image, whose tag names its content) once per set of tests, and kept in ``store``
    when given (a run's: its export then reads it there, not again from gold); a
    Debian-world task's (``state`` given) by ``cligym.harness.debian_reference``."""
    if state is not None:
        return gather_debian(runtime, image, instance_id=instance_id, workdir=workdir, test_command=test_command,
                             f2p=f2p, p2p=p2p, order=order, state=state)
    read, tar = _stored(store, runtime, image, workdir, test_command, tuple(order)) if store is not None \
        else _read_gold(runtime, image, workdir, test_command, tuple(order))
    return read.model_copy(update={"instance_id": instance_id, "fail_to_pass": list(f2p),
                                   "pass_to_pass": list(p2p)}, deep=True), tar


@functools.lru_cache(maxsize=8)
def _stored(store: ReferenceStore, runtime: Runtime, image: str, workdir: str, test_command: str,
            order: tuple[str, ...]) -> tuple[GoldReference, bytes]:
    """``_read_gold``'s answer, from ``store`` when it holds it, else read and put there
    (the tar first: a record names a whole tar; a store that cannot be written to is only
    not filled); kept in memory for the most recent few, as ``_read_gold``'s. Its key hashes
    the arguments, the image's id (a tag given by hand may name another image later) and
    the code that reads it (``_reader_version``)."""
    source = [image, runtime.image_id(image), _reader_version(), workdir, test_command, list(order)]
    key = hashlib.sha256(json.dumps(source).encode()).hexdigest()[:32]
    record, pristine = store.record(key), store.pristine(key)
    if record.is_file() and pristine.is_file():
        try:
            read = GoldReference.model_validate_json(gzip.decompress(record.read_bytes()))
            return read, gzip.decompress(pristine.read_bytes())
        except (OSError, EOFError, ValidationError):
            pass  # (unreadable, or not a reference record: read it again)
    read, tar = _read_gold(runtime, image, workdir, test_command, order)
    try:  # (gzipped: the lines of a fingerprint and the test files shrink about fivefold)
        write_atomic(pristine, gzip.compress(tar, mtime=0))
        write_atomic(record, gzip.compress(read.model_dump_json().encode(), mtime=0))
    except OSError:
        pass
    return read, tar


@functools.cache
def _reader_version() -> str:
    """A hash of what makes a reference: the scripts that read it and its record's schema."""
    parts = [script(name) for name in ("read_reference.py", "read_loader.py", "fingerprint.sh")]
    parts.append(json.dumps(GoldReference.model_json_schema(), sort_keys=True))
    return hashlib.sha256("\0".join(p if isinstance(p, str) else p.decode() for p in parts).encode()).hexdigest()


#: What gold says for a set of tests is kept for the most recent few: the candidates and
#: tasks of one gold mostly select the same tests (F2P and P2P together are gold's suite),
#: and reading it takes a container, a collection by gold's pytest and the reader.
@functools.lru_cache(maxsize=8)
def _read_gold(runtime: Runtime, image: str, workdir: str, test_command: str,
               order: tuple[str, ...]) -> tuple[GoldReference, bytes]:
    with runtime.session(image) as session:
        put_functions(session)
        session.put_files({_READER: script("read_reference.py"), _LOADER_READER: script("read_loader.py")})
        command_path, interpreter = _kept(image, "interpreter", [workdir, test_command],
                                          lambda: _interpreter(session, workdir, test_command))
        # the project's files as the image has them, before any collection writes beside them
        # (less a site directory inside it: the fingerprint lists that whole)
        sites = list(_kept(image, "site directories", [interpreter], lambda: _site_dirs(session, interpreter)))
        session.put_files({_SITES: "".join(f"{s}\n" for s in sites)})
        project = _listing(session, image, "project files", [workdir, *sites],
                           f"m_workdir {shlex.quote(workdir)} {_SITES}")
        rootdir, inifile = _rootdir(session, image, workdir, test_command, list(order))
        data = _read_reference(session, image, interpreter, {"interpreter": interpreter, "rootdir": rootdir,
                                                      "inifile": inifile, "ids": list(order), "workdir": workdir})
        session.put_files({_SPEC: "".join(f"{s}\n" for s in data["spec"]),
                           _LIST: "".join(f"{p}\n" for p in data["pristine"]),
                           _BYTECODE: "".join(f"{p}\n" for p in data["bytecode"])})
        pybin = shlex.quote(data["pybin"])
        fingerprint = _listing(session, image, "fingerprint", [data["pybin"], *data["spec"]],
                            f"PYBIN={pybin} m_listing {_SPEC}")
        prefix = data.get("prefix", "")
        pip = _listing(session, image, "pip configuration", [prefix], f"m_pipconf {shlex.quote(prefix)}", empty=True)
        bytecode = _listing(session, image, "bytecode", data["bytecode"], f"m_bytecode {_BYTECODE}", empty=True)
        resolved = _listing(session, image, "library resolution", [data["loader"], *data["elf"]],
                            f"m_resolved {shlex.quote(data['loader'])} {' '.join(map(shlex.quote, data['elf']))}"
                            ) if data["loader"] else []
        packed = busybox_sh(session, f'set --; while IFS= read -r p; do set -- "$@" "${{p#/}}"; done < {_LIST}; '
                              f'tar -cf {_TAR} -C / "$@"')
        tar = session.get_file(_TAR)
        if not packed.ok or tar is None:
            raise CligymError(f"could not copy the gold test files: {packed.output.strip()[-200:]}")
    reference = GoldReference(
        instance_id="", workdir=workdir, test_command=test_command, interpreter=interpreter,
        command_path=command_path, rootdir=rootdir, inifile=inifile, plugins=data["plugins"],
        fail_to_pass=[], pass_to_pass=[], order=list(order),
        keys=[JunitKey(**k) for k in data["keys"]], pristine=data["pristine"], foreign=data["foreign"],
        conftests=data["conftests"], shadow_dirs=dict(sorted(data["shadow_dirs"].items())),
        protected_modules=data["protected_modules"], spec=data["spec"], fingerprint=fingerprint,
        pybin=data["pybin"], project_files=project, package_dirs=data["package_dirs"],
        loader=data["loader"], elf=data["elf"] if resolved else [], resolved=resolved, path_env=data["path_env"],
        keepalive=data["keepalive"], prefix=prefix, pip_config=pip, bytecode=bytecode,
    )
    return reference, tar
