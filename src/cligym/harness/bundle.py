"""The verifier's bundle, what every exported task carries in its tests/: the static busybox
the verifier runs under, cligym's scripts (package data in ``cligym/harness/scripts``), the
gold reference (read by ``cligym.harness.reference``) as the files ``layout.ReferenceDir``
names, and the entry script a harness starts. The verifier (``scripts/verifier.sh``) finds
every file by the path task.env gives it."""

from __future__ import annotations

import shlex
from importlib import resources
from pathlib import Path

from cligym.errors import CligymError
from cligym.harness.testrun import COLLECTION_OPTION, NO_STOP_OPTION
from cligym.layout import ReferenceDir, TaskDir
from cligym.models.io import save
from cligym.models.reference import GoldReference

#: The verifier script of each world (written into a task's bundle as verifier.sh).
VERIFIERS = {"python": "verifier.sh", "debian": "debian-verifier.sh"}
#: Where the static busybox every exported task carries is looked for, first to last: the one
#: ``scripts/verifier-busybox.sh`` installs (Debian 13's, whose sha256sum uses the CPU's SHA
#: extensions: hashing is most of a verifier's work), then the host's (Debian: busybox-static).
BUSYBOX_PATHS = (Path("/usr/local/libexec/cligym/busybox"), Path("/bin/busybox"))


class NoBusybox(CligymError):
    """The host has no static busybox to ship with exported verifiers."""


def script(name: str) -> str:
    """One of the verifier's files (``cligym/harness/scripts/NAME``)."""
    return resources.files("cligym.harness").joinpath("scripts", name).read_text(encoding="utf-8")


def host_busybox() -> Path:
    """The first of ``BUSYBOX_PATHS`` that exists (the last one when none does)."""
    return next((path for path in BUSYBOX_PATHS if path.is_file()), BUSYBOX_PATHS[-1])


def busybox_bytes() -> bytes:
    """The host's static busybox (``host_busybox``), or NoBusybox with what to install."""
    path = host_busybox()
    try:
        data = path.read_bytes()
    except OSError:
        raise NoBusybox(f"no {path}: the verifier needs a static busybox "
                        "(apt-get install busybox-static, or run scripts/setup.sh)") from None
    if not data.startswith(b"\x7fELF") or b"ld-linux" in data[:8192]:
        raise NoBusybox(f"{path} is not a static busybox (apt-get install busybox-static)")
    return data


def _lines(values: list[str]) -> str:
    return "".join(f"{v}\n" for v in values)


def _in_tests(task: TaskDir, path: Path) -> str:
    return path.relative_to(task.tests).as_posix()


def task_env(reference: GoldReference, task: TaskDir) -> str:
    """The task's values and the path of every file the verifier reads (below its tests/
    folder, ``$T``), as shell assignments verifier.sh sources."""
    first = shlex.split(reference.test_command)[0]
    values = {"WORKDIR": reference.workdir, "COMMAND": reference.test_command, "FIRST": first,
              "COMMAND_PATH": reference.command_path, "ROOTDIR": reference.rootdir, "COUNT": str(len(reference.order)),
              "LOADER": reference.loader, "PYBIN": reference.pybin, "PREFIX": reference.prefix}
    paths = {"R_BUSYBOX": task.busybox, **{v: task.reference.shell(v) for v in ReferenceDir.SHELL}}
    return "# cligym task values, sourced by verifier.sh\n" + "".join(
        f"{k}={shlex.quote(v)}\n" for k, v in values.items()) + "".join(
        f'{k}="$T"/{shlex.quote(_in_tests(task, p))}\n' for k, p in paths.items())


def pytest_args(reference: GoldReference) -> list[str]:
    """What the verifier adds to gold's test command (then --junitxml and the node ids)."""
    pin = [f"--rootdir={reference.rootdir}", *(["-c", reference.inifile] if reference.inifile else [])]
    plugins = [w for p in reference.plugins for w in ("-p", p)]
    return ["-p", "no:cacheprovider", COLLECTION_OPTION, NO_STOP_OPTION, *plugins, *pin,
            "-o", "junit_family=xunit1", "-rA"]


def write_reference(reference: GoldReference, tar: bytes, task: TaskDir) -> None:
    """Everything but the entry script into ``task.tests``: busybox, scripts, data files."""
    folder = task.reference
    folder.path.mkdir(parents=True, exist_ok=True)
    task.busybox.parent.mkdir(parents=True, exist_ok=True)
    task.busybox.write_bytes(busybox_bytes())
    task.busybox.chmod(0o755)
    shadow = sorted(reference.shadow_dirs)
    data = {
        "R_ARGS": pytest_args(reference) if reference.world == "python" else [], "R_TESTS": reference.order,
        "R_KEYS": [f"{k.node}\t{k.classname}\t{k.name}" for k in reference.keys],
        "R_PRISTINE": reference.pristine, "R_FOREIGN": reference.foreign, "R_CONFTESTS": reference.conftests,
        "R_SPEC": reference.spec, "R_FINGERPRINT": reference.fingerprint, "R_WORKDIR": reference.project_files,
        "R_PACKAGES": reference.package_dirs, "R_ELF": reference.elf, "R_RESOLVED": reference.resolved,
        "R_PROTECTED": reference.protected_modules, "R_KEEPALIVE": reference.keepalive,
        "R_PIP": reference.pip_config, "R_BYTECODE": reference.bytecode, "R_SHADOWS": shadow,
    }
    files = {folder.shell(v): _lines(lines) for v, lines in data.items()}
    files |= {folder.shadow(i): _lines(reference.shadow_dirs[d]) for i, d in enumerate(shadow, 1)}
    scripts = {folder.verifier: VERIFIERS[reference.world],
               **{folder.shell(v): folder.shell(v).name for v in ("R_FUNCS", "R_SWEEP", "R_VERDICT", "R_JUDGE")}}
    files |= {path: script(name) for path, name in scripts.items()}
    files[folder.env] = task_env(reference, task)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    folder.shell("R_TAR").write_bytes(tar)
    save(reference, folder.record)


def _entry(name: str) -> str:
    """The entry script ``scripts/NAME``, naming the bundle's busybox and verifier."""
    task = TaskDir(Path())  # only its paths below tests/ count
    text = script(name).replace("@BUSYBOX@", _in_tests(task, task.busybox))
    return text.replace("@VERIFIER@", _in_tests(task, task.reference.verifier))


def harbor_test_sh() -> str:
    """Harbor's ``tests/test.sh``: executed directly, so its busybox shebang applies."""
    return _entry("test.sh")


def tb_run_tests(logs: str) -> str:
    """Terminal-Bench 1.0's ``run-tests.sh`` (the harness runs it with bash): hands over to the
    bundled busybox at once, so nothing else of the image's shell runs."""
    return _entry("run-tests.sh").replace("@LOGS@", shlex.quote(logs))
