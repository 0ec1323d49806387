"""Operators: filesystem_permissions (missing execute bits; tests run as root, so only
execute permission matters)."""

from __future__ import annotations

from cligym.invert.operators.base import Operator, register
from cligym.invert.operators.probing import executed_files
from cligym.invert.operators.targets import TargetData, q

CATEGORY = "filesystem_permissions"


class ModeData(TargetData):
    mode: str  # the original permission bits, which the repair sets again


class _ExecuteBitRemoved(Operator):
    Data = ModeData
    shows = (r"Permission denied", r"PermissionError")
    offline = "Give {path} its execute permission back (chmod)."

    def apply(self, target):
        return [f"RUN chmod a-x {q(target.path)}"]

    def solution(self, target):
        return [f"chmod {target.data.mode} {q(target.path)}"]


@register
class ConsoleScriptNotExecutable(_ExecuteBitRemoved):
    """A command script copied through an archive or a tool that dropped its mode bits."""

    name = "console_script_not_executable"
    symptom = "Tests that run the {name} command fail with PermissionError: Permission denied when starting it."
    hint = "The permission bits of the programs the tests start."

    def applies_to(self, probe, tests):
        return [
            self.target(path=real, name=command.rsplit("/", 1)[-1], touching=touching, mode=probe.files[real].mode)
            for command, real, touching in executed_files(probe, tests)
        ]

    def prepare(self, target, gold):
        content = gold.read(target.path)
        return target if content and content.startswith(b"#!") else None


@register
class InterpreterNotExecutable(_ExecuteBitRemoved):
    """A hardening script that removed execute permission from interpreters it found,
    the one the virtualenv uses included."""

    name = "interpreter_not_executable"
    symptom = "The test command fails at once: starting Python is refused with 'Permission denied'."
    hint = "The permission bits of the Python interpreter the virtualenv points to."
    broad = True
    order = 95

    def applies_to(self, probe, tests):
        path = probe.python.get("realpath", "")
        entry = probe.files.get(path)
        if entry is None or entry.type != "f":
            return []
        return [self.target(path=path, name="python", touching=list(tests), mode=entry.mode)]
