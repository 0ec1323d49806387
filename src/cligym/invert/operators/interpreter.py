"""Operators: interpreter_venv (the virtualenv and the interpreter it runs)."""

from __future__ import annotations

import re

from cligym.invert.operators.base import GoldFiles, Operator, register
from cligym.invert.operators.dependencies import Reinstall, WheelData, owner, wheel_data
from cligym.invert.operators.probing import executed_files
from cligym.invert.operators.targets import Target, TargetData, q
from cligym.models.probe import Probe

CATEGORY = "interpreter_venv"


def missing_interpreter(probe: Probe, folder: str) -> str | None:
    """A plausible interpreter path in ``folder`` that does not exist (an older minor version)."""
    major, _, minor = probe.python.get("version", "3.11").partition(".")
    for older in range(int(minor) - 1, 5, -1):
        path = f"{folder.rstrip('/')}/python{major}.{older}"
        if path not in probe.files:
            return path
    return None


def sed_literal(text: str) -> str:
    """``text`` escaped for the replacement part of a sed s||| command."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("&", "\\&")


#: The ``command`` line of a pyvenv.cfg: the command that made the environment.
VENV_COMMAND = re.compile(rb"^command = (\S*python[\d.]* -m venv [^\n]*)$", re.MULTILINE)


class VenvCfgData(TargetData):
    command: str = ""  # the command that made the virtualenv (run again, it rewrites pyvenv.cfg)


@register
class PyvenvCfgRemoved(Operator):
    """A virtualenv copied to its place without its ``pyvenv.cfg`` (or a cleanup of ``*.cfg``
    files): its interpreter no longer knows it is in a virtualenv."""

    name = "pyvenv_cfg_removed"
    undone_by = "venv_recreated"
    symptom = "The test command fails before any test runs: No module named pytest (nor any other installed package)."
    hint = "How a virtualenv's interpreter knows that it is in a virtualenv."
    shows = (r"No module named '?pytest",)
    offline = ("Run the command that made the virtualenv again ({command}): venv writes pyvenv.cfg anew "
               "and keeps the installed packages, offline.")
    broad = True
    order = 90
    Data = VenvCfgData

    def applies_to(self, probe, tests):
        path = f"{probe.python.get('prefix', '/opt/venv')}/pyvenv.cfg"
        entry = probe.files.get(path)
        if entry is None or entry.type != "f":
            return []
        return [self.target(path=path, name="pyvenv.cfg", touching=list(tests))]

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        """Keep a configuration that records the plain ``venv`` command that made it."""
        venv = target.path.rpartition("/")[0]
        found = VENV_COMMAND.search(gold.read(target.path) or b"")
        if found is None or not found.group(1).decode().endswith(f" {venv}"):
            return None
        return target.with_data(command=found.group(1).decode())

    def solution(self, target):
        return [target.data.command]


class SymlinkData(TargetData):
    link: str  # the link's text, and the missing interpreter it is pointed at instead
    broken: str


@register
class VenvPythonSymlinkBroken(Operator):
    """A virtualenv whose ``python`` link still points at an interpreter release that a
    system upgrade removed."""

    name = "venv_python_symlink_broken"
    undone_by = "venv_recreated"
    symptom = "The test command fails at once: the shell reports 'python: not found'."
    hint = "Where the virtualenv's python command leads."
    shows = (r"python\S*: (command )?not found", r"python\S*: No such file", r"No such file or directory: \S*python")
    offline = "Point the virtualenv's python link back at the installed interpreter ({link})."
    Data = SymlinkData
    broad = True
    order = 90

    def applies_to(self, probe, tests):
        path = f"{probe.python.get('prefix', '/opt/venv')}/bin/python"
        entry = probe.files.get(path)
        broken = missing_interpreter(probe, "/usr/bin")
        if entry is None or entry.type != "l" or broken is None:
            return []
        return [self.target(path=path, name="python", touching=list(tests), link=entry.link, broken=broken)]

    def apply(self, target):
        return [f"RUN ln -sfn {q(target.data.broken)} {q(target.path)}"]

    def solution(self, target):
        return [f"ln -sfn {q(target.data.link)} {q(target.path)}"]


class ShebangData(WheelData):
    broken: str  # the shebang written in


@register
class ConsoleScriptShebangWrong(Reinstall):
    """Command scripts copied from a virtualenv of another Python release: their shebang
    names an interpreter this machine does not have."""

    name = "console_script_shebang_wrong"
    undone_by = "venv_recreated"
    symptom = ("Tests that run the {name} command fail with 'No such file or directory' (FileNotFoundError), "
               "although the command's file is there.")
    hint = "How the installed command scripts choose the interpreter that runs them."
    shows = (r"No such file or directory", r"bad interpreter", r"FileNotFoundError")
    Data = ShebangData

    def applies_to(self, probe, tests):
        prefix = probe.python.get("prefix", "/opt/venv")
        broken = missing_interpreter(probe, f"{prefix}/bin")
        if broken is None:
            return []
        targets = []
        for _, real, touching in executed_files(probe, tests):
            wheel = wheel_data(probe, owner(probe, real))
            if real.startswith(f"{prefix}/bin/") and wheel.get("reinstall"):
                targets.append(self.target(path=real, name=real.rsplit("/", 1)[-1], touching=touching,
                                           broken="#!" + broken, **wheel))
        return targets

    def inspect(self, target, gold):
        first = (gold.read(target.path) or b"").split(b"\n", 1)[0]
        return target if first.startswith(b"#!") and b"python" in first else None

    def apply(self, target):
        return [f"RUN sed -i {q('1s|^#!.*$|' + sed_literal(target.data.broken) + '|')} {q(target.path)}"]
