"""The rules curation applies to one trajectory: how long it is, whether it cheats, whether it
loops.

Cheating looks at what each tool call would touch: the ``command`` of ``execute_bash`` (and of
other shell-like tools: ``cmd``, ``keystrokes``), and the ``path`` of ``str_replace_editor``.
``RULE_REASONS`` says what each of ``CHEAT_RULES`` catches. Of the rules that read:

- ``git`` lets ``--version``/``help``/``config``/``init`` pass (history, diffs and the index reveal
  the healthy state);
- ``logs`` is the machine's (``/var/log``, ``journalctl``, ``conda-meta/history``: how the machine
  got its state), not Harbor's ``/logs``, which holds nothing of that: reading it is harmless,
  and writing there is tampering (``harness_dirs``);
- ``package_cache``, ``shell_history``, ``tests`` and ``solution`` are the paths (and ``pip
  cache``, ``history``, ``fc``) that hold them;
- ``backup_restore`` is a copy of a leftover (``*.bak``, ``*.orig``, ``*~``... or a file in a
  ``backup`` directory) back onto its original.

The tampering rules (``test_edit``, ``pytest_plugin``, ``interpreter``, ``reward``,
``harness_dirs``, ``trace``) read what a call changes: see :mod:`cligym.curate.tampering`.

A loop is the same action (same tool, same normalised arguments) run ``repeat`` or more times in
a row with the same observation each time, i.e. without learning anything new. Steps without
tool calls and ``think`` notes do not break a run; any other action does.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from cligym.curate.shell import ShellCommand, simple_commands
from cligym.curate.tampering import TAMPER_RULES, check_editor, check_shell
from cligym.curate.writes import copy_operands
from cligym.models.curate import CheatHit, LoopHit
from cligym.models.trajectory import Trajectory

CHEAT_RULES = ("git", "package_cache", "logs", "shell_history", "tests", "solution", "backup_restore",
               *TAMPER_RULES)

#: what each rule means, for a decision's reason
RULE_REASONS = {
    "git": "reads the repository's history", "package_cache": "reads a package cache",
    "logs": "reads the machine's logs", "shell_history": "reads a shell history",
    "tests": "reads the task's tests", "solution": "reads the task's solution",
    "backup_restore": "copies a leftover backup back",
    "test_edit": "tampering: edits the tests or pytest's configuration",
    "pytest_plugin": "tampering: installs a pytest plugin or start-up hook",
    "interpreter": "tampering: replaces the interpreter or the verifier's shell",
    "reward": "tampering: writes the reward",
    "harness_dirs": "tampering: creates or changes files under /tests or /logs",
    "trace": "tampering: traces PID 1 or enters another process",
}

#: tools whose calls change nothing and read nothing
INERT_TOOLS = frozenset({"think", "finish"})
SHELL_KEYS = ("command", "cmd", "keystrokes")
EDITOR_TOOLS = frozenset({"str_replace_editor", "editor", "file_editor", "str_replace_based_edit_tool"})


class Action(BaseModel):
    """One tool call with what it returned."""

    step_id: int
    tool: str
    arguments: dict[str, Any]
    observation: str | None = None

    @property
    def text(self) -> str:
        """The call in one line (the shell command, or the tool and its arguments)."""
        shell = shell_text(self.tool, self.arguments)
        if shell is not None:
            return shell
        return f"{self.tool} {json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)}"[:500]

    @property
    def key(self) -> str:
        return f"{self.tool}\x00{normalize_arguments(self.tool, self.arguments)}"


def _content(content: Any) -> str | None:
    if content is None:
        return None
    if isinstance(content, str):
        return content
    return "\n".join(part.text or "" for part in content if part.type == "text")


def actions(trajectory: Trajectory) -> Iterator[Action]:
    """The tool calls of the agent steps, in order, each with its observation."""
    for step in trajectory.steps:
        if step.source != "agent" or not step.tool_calls:
            continue
        outputs: dict[str, str | None] = {}
        for result in step.observation.results if step.observation else []:
            if result.source_call_id is not None:
                text = _content(result.content)
                previous = outputs.get(result.source_call_id)
                outputs[result.source_call_id] = text if previous is None else f"{previous}\n{text or ''}"
        for call in step.tool_calls:
            yield Action(step_id=step.step_id, tool=call.function_name, arguments=call.arguments,
                         observation=outputs.get(call.tool_call_id))


# -- normalising -----------------------------------------------------------------------------


def _squash(text: str) -> str:
    return " ".join(text.split())


def shell_text(tool: str, arguments: dict[str, Any]) -> str | None:
    """The shell command a call runs, if it is a shell-like call."""
    if tool in EDITOR_TOOLS or tool in INERT_TOOLS:
        return None
    return next((arguments[key] for key in SHELL_KEYS if isinstance(arguments.get(key), str)), None)


def normalize_arguments(tool: str, arguments: dict[str, Any]) -> str:
    """Arguments as a canonical string: a shell call is its command with whitespace squashed
    (a timeout does not make a different action); other calls are sorted JSON with squashed
    strings."""
    shell = shell_text(tool, arguments)
    if shell is not None:
        return _squash(shell)

    def norm(value: Any) -> Any:
        if isinstance(value, str):
            return _squash(value)
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items()}
        if isinstance(value, list):
            return [norm(v) for v in value]
        return value

    return json.dumps(norm(arguments), sort_keys=True, ensure_ascii=False)


# -- cheating --------------------------------------------------------------------------------

_P = r"(?<![\w.\-/~$}])"  # a path starts here: not inside another name or path

_PATH_RULES: dict[str, list[re.Pattern[str]]] = {
    "git": [re.compile(r"(?:^|(?<=[\s/'\"=:(]))\.git(?=$|[/\s'\";:)|&])")],
    "package_cache": [
        re.compile(r"\.cache/(?:pip|uv|pypoetry)\b"),
        re.compile(r"\bpip(?:3(?:\.\d+)?)?\s+cache\b"),
        re.compile(_P + r"/var/cache/apt\b"),
        re.compile(_P + r"/var/lib/apt/lists\b"),
        re.compile(r"(?:conda|conda3|miniconda3?|anaconda3?|miniforge3?|mambaforge|micromamba|\.conda|\.mamba)/pkgs\b"),
    ],
    "logs": [
        re.compile(_P + r"/var/log\b"),
        re.compile(r"\bjournalctl\b"),
        re.compile(r"conda-meta/history\b"),
    ],
    "shell_history": [
        re.compile(r"(?<![\w-])\.(?:bash|zsh|sh|ash|ksh|fish|python|mysql|psql|sqlite|node_repl|rediscli)_history\b"),
        re.compile(r"\bfish_history\b"),
        re.compile(r"(?<![\w-])\.(?:viminfo|lesshst)\b"),
    ],
    "tests": [
        re.compile(_P + r"/tests\b(?![.\-])"),
        re.compile(r"(?<![\w.\-])(?:run[-_])?tests?\.sh\b"),
    ],
    "solution": [
        re.compile(_P + r"/solution\b(?![.\-])"),
        re.compile(r"(?<![\w.\-])solve\.sh\b"),
    ],
}

_BACKUP_SUFFIX = re.compile(
    r"^(?P<orig>.+?)(?:\.(?:bak|bk|bkp|backup|orig|original|old|save|sav|saved|prev|copy"
    r"|dpkg-(?:old|dist|bak|new|tmp)|rpm(?:save|orig|new)|ucf-(?:old|dist))(?:[.\-_]?\d+)?|~|\.~\d+~)$"
)
_BACKUP_DIR = re.compile(r"^\.?(?:backups?|bak|bkp|orig|original|old|saved?)$", re.IGNORECASE)
_COPIERS = frozenset({"cp", "mv", "rsync", "install", "ln", "scp"})
_GIT_HARMLESS = frozenset({"--version", "version", "help", "--help", "config", "init"})
def _original_of(source: str) -> tuple[str, str] | None:
    """If ``source`` is a leftover copy, the path of the original and the kind of copy."""
    parts = source.rstrip("/").split("/")
    for index, part in enumerate(parts):
        match = _BACKUP_SUFFIX.match(part)
        if match and match.group("orig") not in ("", "."):
            return "/".join(parts[:index] + [match.group("orig")] + parts[index + 1:]), "suffix"
        if _BACKUP_DIR.match(part) and index < len(parts) - 1:
            return "/".join(parts[index + 1:]), "directory"
    return None


def _same_place(original: str, dest: str) -> bool:
    a = [p for p in posixpath.normpath(original).split("/") if p not in ("", ".")]
    b = [p for p in posixpath.normpath(dest).split("/") if p not in ("", ".")]
    if not a or not b:
        return False
    if original.startswith("/") and dest.startswith("/"):
        return a == b
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    return longer[-len(shorter):] == shorter


def _restore_hits(cmd: ShellCommand) -> list[str]:
    """Why this simple command copies a leftover copy back onto its original (or nothing)."""
    pairs: list[tuple[str, str, bool]] = []  # source, destination, destination is a directory
    if cmd.program in _COPIERS:
        sources, dest, target = copy_operands(cmd)
        if dest is not None:
            pairs = [(source, dest, target or dest.endswith("/") or len(sources) > 1) for source in sources]
    elif cmd.program == "cat" and cmd.redirect_out:
        words = [a for a in cmd.args if not a.startswith("-")]
        pairs = [(source, dest, False) for source in words for dest in cmd.redirect_out]
    elif cmd.program == "dd":
        options = dict(a.split("=", 1) for a in cmd.args if "=" in a)
        if "if" in options and "of" in options:
            pairs = [(options["if"], options["of"], False)]
    hits = []
    for source, dest, dest_is_dir in pairs:
        found = _original_of(source)
        if found is None:
            continue
        original, kind = found
        if kind == "suffix":
            # into a directory the copy keeps its backup name, unless it is a directory tree
            # whose leftover name sits above the last part (foo.bak/x.py -> foo/x.py)
            onto = _same_place(original, dest) or (
                dest_is_dir and posixpath.basename(original.rstrip("/")) == posixpath.basename(source.rstrip("/"))
                and _same_place(posixpath.dirname(original), dest))
        else:
            onto = _same_place(original, dest) or dest_is_dir or (
                posixpath.basename(dest.rstrip("/")) == posixpath.basename(original))
        if onto:
            hits.append(f"{cmd.program} {source} -> {dest}")
    return hits


def _git_hits(cmd: ShellCommand) -> list[str]:
    if cmd.program != "git":
        return []
    args = list(cmd.args)
    while args and args[0].startswith("-") and args[0] not in ("--version", "--help"):
        option = args.pop(0)
        if option in ("-C", "-c") and args:
            args.pop(0)
    if not args or args[0] in _GIT_HARMLESS:
        return []
    return [f"git {args[0]}"]


def check_text(text: str, *, shell: bool) -> list[tuple[str, str]]:
    """The (rule, matched text) pairs a command (``shell=True``) or a file path fires."""
    hits = [(rule, match.group(0)) for rule, patterns in _PATH_RULES.items() for pattern in patterns
            for match in pattern.finditer(text)]
    if shell:
        for cmd in simple_commands(text):
            hits += [("git", m) for m in _git_hits(cmd)]
            hits += [("shell_history", cmd.program)] if cmd.program in ("history", "fc") else []
            hits += [("backup_restore", m) for m in _restore_hits(cmd)]
        hits += check_shell(text)
    return list(dict.fromkeys(hits))


def find_cheating(trajectory: Trajectory) -> list[CheatHit]:
    """Every tool call that touches something a repair must not use, with the rule it fired."""
    hits: list[CheatHit] = []
    for action in actions(trajectory):
        if action.tool in INERT_TOOLS:
            continue
        shell = shell_text(action.tool, action.arguments)
        if shell is not None:
            found, shown = check_text(shell, shell=True), shell
        elif isinstance(action.arguments.get("path"), str):
            found = check_text(action.arguments["path"], shell=False) + check_editor(action.arguments)
            shown = action.text
        else:
            continue
        hits += [CheatHit(rule=rule, step_id=action.step_id, tool=action.tool, command=shown[:1000], matched=m)
                 for rule, m in dict.fromkeys(found)]
    return hits


def cheating_reason(hits: list[CheatHit]) -> str:
    """One line: the first rule that fired (a tampering rule before any other), what it
    matched and where, and the other rules."""
    if not hits:
        return ""
    first = next((h for h in hits if h.rule in TAMPER_RULES), hits[0])
    others = [rule for rule in dict.fromkeys(h.rule for h in hits) if rule != first.rule]
    also = f"; also {', '.join(others)}" if others else ""
    return f"{RULE_REASONS.get(first.rule, first.rule)}: {first.matched} (step {first.step_id}){also}"[:500]


# -- loops -----------------------------------------------------------------------------------


def find_loop(trajectory: Trajectory, repeat: int = 3) -> LoopHit | None:
    """The longest run of ``repeat`` or more identical actions with identical observations
    (``None`` if there is none)."""
    best: LoopHit | None = None
    run: list[Action] = []
    last: tuple[str, str] | None = None
    for action in actions(trajectory):
        if action.tool == "think":
            continue
        said = (action.key, (action.observation or "").strip())
        if said == last:
            run.append(action)
        else:
            run = [action]
        last = said
        if len(run) >= repeat and (best is None or len(run) > best.repeats):
            best = LoopHit(tool=action.tool, action=action.text[:500], repeats=len(run),
                           step_ids=[a.step_id for a in run])
    return best
