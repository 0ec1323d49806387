"""Operators: filesystem_permissions (missing execute bits; tests run as root, so only
execute permission matters)."""

from __future__ import annotations

from cligym.invert.operators.base import Operator, Target, executed_files, q, register


def is_script(target: Target, gold) -> bool:
    content = gold.read(target.path)
    return bool(content and content.startswith(b"#!"))


@register
class ConsoleScriptNotExecutable(Operator):
    name = "console_script_not_executable"
    category = "filesystem_permissions"
    symptom = "Tests that run the {name} command fail with a permission error when starting it."
    hint = "The permission bits of the programs the tests start."

    def applies_to(self, probe, tests):
        return [
            Target(path=real, name=command.rsplit("/", 1)[-1], data={"mode": probe.files[real].mode}, touching=touching)
            for command, real, touching in executed_files(probe, tests)
        ]

    def prepare(self, target, gold):
        return target if is_script(target, gold) else None

    def apply(self, target):
        return [f"RUN chmod a-x {q(target.path)}"]

    def solution(self, target):
        return f"chmod {target.data['mode']} {q(target.path)}\n"


@register
class InterpreterNotExecutable(Operator):
    name = "interpreter_not_executable"
    category = "filesystem_permissions"
    symptom = "The test command fails at once: starting Python is refused with a permission error."
    hint = "The permission bits of the Python interpreter the virtualenv points to."
    broad = True
    order = 95

    def applies_to(self, probe, tests):
        path = probe.python.get("realpath", "")
        entry = probe.files.get(path)
        if entry is None or entry.type != "f":
            return []
        return [Target(path=path, name="python", data={"mode": entry.mode}, touching=list(tests))]

    def apply(self, target):
        return [f"RUN chmod a-x {q(target.path)}"]

    def solution(self, target):
        return f"chmod {target.data['mode']} {q(target.path)}\n"
