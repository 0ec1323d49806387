"""Operators: filesystem_permissions (missing execute bits; tests run as root, so only
execute permission matters)."""

from __future__ import annotations

from cligym.invert.operators.base import Operator, Target, q, register
from cligym.invert.operators.import_system import own
from cligym.invert.probe import Probe


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
        for command in sorted(own(probe, test, "commands")):
            real = resolve_command(probe, command)
            if real is None or real == interpreter or not int(probe.files[real].mode, 8) & 0o111:
                continue
            found.setdefault(real, (command, []))[1].append(test)
    out = [(command, real, touching) for real, (command, touching) in found.items()]
    return sorted(out, key=lambda item: (len(item[2]), item[1]))


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
