"""The verdict bundle: what a task's verifier trusts, taken from gold, shipped in ``tests/``.

A verifier that runs the task's tests with whatever the agent left in the image can be
talked into a reward: a conftest hook that marks every test passed, a ``python`` that
exits 0, a background process writing 1 into the reward file, an edited test, a
``pytest.ini`` that deselects the failing tests. So at export time (and at invert time, to
throw out states the verifier would repair by itself) this module reads from a container
of the gold image, with network none:

- pristine copies of the task's test files, the ``*.py`` beside them, every conftest.py
  below the rootdir, the ``__init__.py`` and pytest configuration files around the tests
  (``pristine.tar``), and where such files did *not* exist in gold (deleted if present);
- a manifest of what decides how the tests run and no repair legitimately changes away
  from gold: the interpreter (the link chain of the test command's ``python``, the real
  binary, libpython if mapped, ``pyvenv.cfg``), the standard library, the files of pytest
  and its own distributions and of gold's pytest plugins, the ``*.pth`` / sitecustomize /
  usercustomize entries of every ``sys.path`` folder, and the ``sys.path`` entries gold
  lacks (which must stay absent); listed in gold by the same busybox code the verifier
  runs, so the two listings compare line by line;
- gold's pytest plugins (``pytest11`` entry points), loaded by name with autoloading off;
- how gold's pytest names each node id in its JUnit report, so that the verdict is read
  per test from the report and never from an exit status;
- a static busybox (the host's ``/bin/busybox``, Debian's ``busybox-static``), so the
  verifier needs nothing of the image's shell, coreutils, libc or Python.

Requiring gold's interpreter, standard library and pytest is consistent with every task:
where a breakage is in the interpreter or the standard library, its repair must restore
gold's files (the oracle's solution does), and no operator breaks the files of pytest or
of a pytest plugin (``is_tooling``). A breakage of the test configuration itself (a
pytest.ini or conftest.py added by ΔD) would be undone by the verifier, so those operators
are not in the default operator set.
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from pathlib import Path

from cligym.errors import CligymError
from cligym.harness.verdict_probe import SCRIPT as PROBE_SCRIPT
from cligym.harness.verdict_script import JUDGE, MANIFEST_FUNCS, verifier_script
from cligym.harness.verifier import REWARD_FILE, TESTS_DIR, VERIFIER_LOGS, run_verifier
from cligym.layout import TaskDir
from cligym.models.io import save
from cligym.models.validate import ModeResult
from cligym.models.verdict import JunitKey, VerdictBundle
from cligym.runtime import Runtime, Session

#: The static busybox on the host that every exported task carries (Debian: busybox-static).
HOST_BUSYBOX = Path("/bin/busybox")
#: Canonical names of the distributions of pytest and its own dependencies (and the
#: packaging tools whose files run at interpreter start-up through their .pth hooks).
TOOLING = ("pytest", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "colorama",
           "pygments", "py", "setuptools")

# in-container scratch places of the gold container (never in a task image)
_BB, _FUNCS, _PROBE, _ARGS = "/tmp/busybox", "/tmp/cligym-manifest.sh", "/tmp/cligym-probe.py", "/tmp/cligym-args.json"
_SPEC, _OUT, _LIST, _TAR = "/tmp/cligym-spec.txt", "/tmp/cligym-out.txt", "/tmp/cligym-list.txt", "/tmp/cligym-pristine.tar"
_PROBE_OUT, _SOLUTION = "/tmp/cligym-probe.json", "/tmp/cligym-solve.sh"


class NoBusybox(CligymError):
    """The host has no static busybox to ship with exported verifiers."""


def busybox_bytes() -> bytes:
    """The host's static busybox, or NoBusybox with what to install."""
    try:
        data = HOST_BUSYBOX.read_bytes()
    except OSError:
        raise NoBusybox(f"no {HOST_BUSYBOX}: the verifier needs a static busybox "
                        "(apt-get install busybox-static, or run scripts/setup.sh)") from None
    if not data.startswith(b"\x7fELF") or b"ld-linux" in data[:8192]:
        raise NoBusybox(f"{HOST_BUSYBOX} is not a static busybox (apt-get install busybox-static)")
    return data


def _sh(session: Session, script: str, *args: str, timeout: float = 300):
    return session.exec([_BB, "sh", "-c", script, "cligym", *args], timeout=timeout)


def _interpreter(session: Session, workdir: str, test_command: str) -> tuple[str, str]:
    """(what the test command's first word resolves to, the Python interpreter it runs)."""
    first = shlex.split(test_command)[0]
    found = _sh(session, 'cd "$1" && command -v "$2"', workdir, first)
    path = found.output.strip().splitlines()[-1] if found.ok and found.output.strip() else ""
    if not path.startswith("/"):
        raise CligymError(f"the test command's {first!r} is not found in the gold image")
    if re.fullmatch(r"python[0-9.]*", path.rsplit("/", 1)[-1]):
        return path, path
    head = (session.get_file(path) or b"").split(b"\n", 1)[0].decode("utf-8", "replace")
    words = head[2:].split() if head.startswith("#!") else []
    if words and words[0].endswith("/env") and len(words) > 1:
        found = _sh(session, 'command -v "$1"', words[1])
        words = [found.output.strip()]
    if not words or not words[0].startswith("/"):
        raise CligymError(f"cannot tell which Python the test command's {first!r} runs in the gold image")
    return path, words[0]


def _rootdir(session: Session, workdir: str, test_command: str, ids: list[str]) -> tuple[str, str | None]:
    """Gold's pytest rootdir and configuration file for these node ids."""
    script = f'cd "$1" && shift && {test_command} --collect-only -p no:cacheprovider "$@"'
    run = _sh(session, script, workdir, *ids, timeout=900)
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
    raw = session.get_file(path)
    try:
        return json.loads(raw or b"")
    except ValueError:
        raise CligymError(f"could not read {what} from the gold image") from None


#: Gold manifests by (gold image, spec): hashing the interpreter, the standard library and
#: the tooling is the costly part of a bundle, and a gold image (its tag is a content hash)
#: never changes, so every candidate and every task of one gold shares one listing.
_MANIFESTS: dict[tuple[str, tuple[str, ...]], list[str]] = {}


def _manifest(session: Session, image: str, spec: list[str]) -> list[str]:
    """The manifest listing of ``spec`` in the gold image (made once per process)."""
    key = (image, tuple(spec))
    if key not in _MANIFESTS:
        listed = _sh(session, f". {_FUNCS}; m_listing {_SPEC} > {_OUT}", timeout=600)
        manifest = (session.get_file(_OUT) or b"").decode("utf-8", "replace").splitlines()
        if not listed.ok or not manifest:
            raise CligymError(f"could not list the gold manifest: {listed.output.strip()[-200:]}")
        _MANIFESTS[key] = manifest
    return list(_MANIFESTS[key])


def gather(
    runtime: Runtime, image: str, *, instance_id: str, workdir: str, test_command: str,
    f2p: list[str], p2p: list[str], order: list[str],
) -> tuple[VerdictBundle, bytes]:
    """The verdict bundle of a task and its pristine files (a tar), read from ``image``."""
    busybox = busybox_bytes()
    with runtime.session(image) as session:
        session.put_files({_BB: (busybox, 0o755), _FUNCS: MANIFEST_FUNCS, _PROBE: PROBE_SCRIPT})
        command_path, interpreter = _interpreter(session, workdir, test_command)
        rootdir, inifile = _rootdir(session, workdir, test_command, order)
        args = {"interpreter": interpreter, "rootdir": rootdir, "inifile": inifile, "ids": order,
                "tooling": list(TOOLING), "workdir": workdir}
        session.put_files({_ARGS: json.dumps(args)})
        probe = session.exec(["sh", "-c", f"cd \"$1\" && {interpreter} -I {_PROBE} {_ARGS} > {_PROBE_OUT}",
                              "cligym", workdir], timeout=300)
        if not probe.ok:
            raise CligymError(f"could not read the verdict bundle from the gold image: {probe.output.strip()[-200:]}")
        data = _read_json(session, _PROBE_OUT, "the verdict bundle")
        session.put_files({_SPEC: "\n".join(data["spec"]) + "\n", _LIST: "\n".join(data["pristine"]) + "\n"})
        manifest = _manifest(session, image, data["spec"])
        packed = _sh(session, f'set --; while IFS= read -r p; do set -- "$@" "${{p#/}}"; done < {_LIST}; '
                              f'tar -cf {_TAR} -C / "$@"')
        tar = session.get_file(_TAR)
        if not packed.ok or tar is None:
            raise CligymError(f"could not copy the gold test files: {packed.output.strip()[-200:]}")
    bundle = VerdictBundle(
        instance_id=instance_id, workdir=workdir, test_command=test_command, interpreter=interpreter,
        command_path=command_path, rootdir=rootdir, inifile=inifile, plugins=data["plugins"],
        fail_to_pass=list(f2p), pass_to_pass=list(p2p), order=list(order),
        keys=[JunitKey(**k) for k in data["keys"]], pristine=data["pristine"], foreign=data["foreign"],
        conftests=data["conftests"], pycache_dirs=data["pycache_dirs"],
        shadow_dirs=dict(sorted(data["shadow_dirs"].items())),  # the probe's set order varies by process
        protected_modules=data["protected_modules"], spec=data["spec"], manifest=manifest,
    )
    return bundle, tar


def _lines(values: list[str]) -> str:
    return "".join(f"{v}\n" for v in values)


def write_bundle(bundle: VerdictBundle, tar: bytes, task: TaskDir) -> None:
    """Everything but the entry script into ``task.tests``: busybox, the data files."""
    folder = task.verdict
    folder.mkdir(parents=True, exist_ok=True)
    task.busybox.parent.mkdir(parents=True, exist_ok=True)
    task.busybox.write_bytes(busybox_bytes())
    task.busybox.chmod(0o755)
    shadow = sorted(bundle.shadow_dirs)
    files = {
        "tests.txt": _lines(bundle.order),
        "keys.tsv": _lines([f"{k.node}\t{k.classname}\t{k.name}" for k in bundle.keys]),
        "pristine.txt": _lines(bundle.pristine),
        "foreign.txt": _lines(bundle.foreign),
        "conftests.txt": _lines(bundle.conftests),
        "pycache.txt": _lines(bundle.pycache_dirs),
        "spec.txt": _lines(bundle.spec),
        "manifest.txt": _lines(bundle.manifest),
        "protected.txt": _lines(bundle.protected_modules),
        "shadow-dirs.txt": _lines(shadow),
        "judge.awk": JUDGE.lstrip("\n"),
        **{f"shadow-{i}.txt": _lines(bundle.shadow_dirs[d]) for i, d in enumerate(shadow, 1)},
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "pristine.tar").write_bytes(tar)
    save(bundle, folder / "bundle.json")


def harbor_test_sh(bundle: VerdictBundle) -> str:
    """Harbor's ``tests/test.sh``: executed directly, so its busybox shebang applies."""
    return verifier_script(bundle, tests_dir=TESTS_DIR, reward=REWARD_FILE, logs=VERIFIER_LOGS, mode="harbor")


def tb_verdict_sh(bundle: VerdictBundle, logs: str) -> str:
    """Terminal-Bench 1.0's verifier, run with the busybox beside it by ``run-tests.sh``."""
    return verifier_script(bundle, tests_dir=TESTS_DIR, reward=f"{logs}/reward.txt", logs=logs, mode="tb")


def tb_run_tests(tests_var: str = "TEST_DIR") -> str:
    """Terminal-Bench 1.0's ``run-tests.sh`` (the harness runs it with bash): hands over to
    the bundled busybox at once, so nothing else of the image's shell runs."""
    return (
        "#!/bin/bash\n"
        "# cligym verifier: runs under the static busybox shipped in the task's tests/\n"
        f'exec "${{{tests_var}:-{TESTS_DIR}}}/bin/busybox" sh "${{{tests_var}:-{TESTS_DIR}}}/verdict.sh"\n'
    )


def judge_image(runtime: Runtime, image: str, bundle: VerdictBundle, pristine: bytes,
                solution: str) -> tuple[ModeResult, ModeResult]:
    """The rewards the bundled verifier gives a broken image with nothing done, and after
    ``solution`` (run as the oracle's repair script), each in a fresh container, the way
    Harbor runs a task's tests/."""
    with tempfile.TemporaryDirectory(prefix="cligym-verdict-") as tmp:
        task = TaskDir(Path(tmp))
        write_bundle(bundle, pristine, task)
        task.test_sh.write_text(harbor_test_sh(bundle))
        task.test_sh.chmod(0o755)
        with runtime.session(image) as session:
            nothing = run_verifier(session, task)
        with runtime.session(image) as session:
            session.put_files({_SOLUTION: (solution, 0o755)})
            fixed = session.exec(["sh", _SOLUTION], timeout=900)
            session.exec(["rm", "-f", _SOLUTION], timeout=60)
            solved = run_verifier(session, task) if fixed.exit_code == 0 else ModeResult(
                reward=None, detail=f"the solution exited {fixed.exit_code}")
    return nothing, solved
