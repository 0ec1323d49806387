"""The tools an agent gets inside a task container (``execute_bash`` in a persistent shell,
see :mod:`cligym.agents.shell`; ``str_replace_editor``; ``think``; ``finish``), and their
executor."""

from __future__ import annotations

import contextlib
import shlex
import time
from typing import Any

from cligym.agents.shell import OneShotShell, ShellUnavailable, TmuxShell, cut
from cligym.errors import CligymError, EngineUnavailable
from cligym.runtime import Session

#: The longest a command may run, whatever timeout it asks for.
MAX_COMMAND_SECONDS = 3600


def tool_definitions(command_timeout: int = 120) -> list[dict[str, Any]]:
    """The tools as the model is told of them (OpenAI's function schema); the shell's
    description states the default timeout ``command_timeout`` and the longest one."""
    bash = {
        "type": "function",
        "function": {
            "name": "execute_bash",
            "description": "Run a bash command in a persistent shell session in the task container: the "
            "working directory, variables, functions and background jobs persist between calls. A command "
            f"past its timeout ({command_timeout} s unless you give one, at most {MAX_COMMAND_SECONDS} s and "
            "never past the time left for the task) is interrupted with Ctrl-C. Long output is cut in the "
            "middle. Commands get no input: do not start interactive programs.",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line to run."},
                    "timeout": {"type": "integer", "description": f"Seconds before the command is interrupted "
                                                                  f"(default {command_timeout})."},
                },
                "required": ["command"],
            },
        },
    }
    return [bash, *_OTHER_TOOLS]


_OTHER_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "str_replace_editor",
            "description": "View a file or a directory (two levels, hidden entries left out), create a new file, "
            "edit one (str_replace, insert) or undo the last edit of a file (undo_edit).",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "undo_edit"]},
                    "path": {"type": "string", "description": "Absolute path in the container."},
                    "file_text": {"type": "string", "description": "create: the whole content (the file must "
                                                                   "not exist yet)."},
                    "old_str": {"type": "string", "description": "str_replace: text that occurs exactly once."},
                    "new_str": {"type": "string", "description": "str_replace / insert: the new text."},
                    "insert_line": {"type": "integer", "description": "insert: after this line (0 = top)."},
                    "view_range": {"type": "array", "items": {"type": "integer"},
                                   "description": "view: [first, last]."},
                },
                "required": ["command", "path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "think",
            "description": "Write down your reasoning. Changes nothing.",
            "parameters": {"type": "object", "properties": {"thought": {"type": "string"}}, "required": ["thought"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "finish",
            "description": "Call when the task is done, with a short summary of what you did.",
            "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": []},
        },
    },
]

#: The tools with the default command timeout.
TOOLS: list[dict[str, Any]] = tool_definitions()


class ToolExecutor:
    """Executes tool calls in one container session."""

    def __init__(self, session: Session, *, workdir: str = "/", command_timeout: int = 120, max_output: int = 10_000):
        self.session = session
        self.workdir = workdir
        self.command_timeout = command_timeout
        self.max_output = max_output
        #: a ``time.monotonic()`` value no command may run past (the agent run's end), or None
        self.deadline: float | None = None
        self.shell: TmuxShell | OneShotShell | None = None
        #: per path, what each editor write replaced (content, mode; None: no file), for undo_edit
        self.history: dict[str, list[tuple[bytes | None, int]]] = {}

    def run(self, name: str, arguments: dict[str, Any]) -> str:
        """The observation for one call; every problem becomes an error text for the model,
        never a raise, except the engine becoming unreachable: EngineUnavailable ends the run,
        since every later call would fail the same way."""
        try:
            if name == "execute_bash":
                return self.bash(str(arguments["command"]), arguments.get("timeout"))
            if name == "str_replace_editor":
                return self.edit(arguments)
            if name == "think":
                return "(noted)"
            if name == "finish":
                return "(finished)"
            return f"error: unknown tool {name!r}; the tools are execute_bash, str_replace_editor, think, finish"
        except KeyError as exc:
            return f"error: missing argument {exc.args[0]!r} for {name}"
        except (TypeError, ValueError) as exc:
            return f"error: bad arguments for {name}: {exc}"
        except EngineUnavailable:
            raise
        except CligymError as exc:  # e.g. a write the engine refused
            return f"error: {name} failed: {str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__}"

    def bash(self, command: str, timeout: Any = None) -> str:
        seconds = self.command_timeout
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
            seconds = min(int(timeout), MAX_COMMAND_SECONDS)
        if self.deadline is not None:
            left = int(self.deadline - time.monotonic())
            if left < 1:
                return "error: the command was not run: no time is left for the task"
            seconds = min(seconds, left)
        self.shell = self.shell or TmuxShell(self.session, self.workdir, self.max_output)
        try:
            return self.shell.run(command, seconds)
        except ShellUnavailable as exc:  # tmux cannot start here, or broke mid-run (its binary or libraries)
            self.shell = OneShotShell(self.session, self.workdir, self.max_output)
            return (f"[note: no persistent shell could be kept in this container ({str(exc)[:200]}); each command "
                    "now runs in a fresh bash that keeps only the working directory and exported variables]\n"
                    + self.shell.run(command, seconds))

    def close(self) -> None:
        """Stop the shell with everything it started and remove its files from the container."""
        shell, self.shell = self.shell, None
        if shell is not None:
            with contextlib.suppress(CligymError):  # best effort: the container is removed next anyway
                shell.close()

    def edit(self, args: dict[str, Any]) -> str:
        command, path = args["command"], str(args["path"])
        if not path.startswith("/"):
            return "error: path must be absolute"
        if command == "view":
            return self._view(path, args.get("view_range"))
        if command == "undo_edit":
            return self._undo(path)
        if command not in ("create", "str_replace", "insert"):
            return f"error: unknown editor command {command!r}; use view, create, str_replace, insert or undo_edit"
        data = self.session.get_file(path)
        if command == "create":
            if data is not None or self.session.exec(["test", "-e", path], timeout=60).ok:
                return f"error: {path} already exists; change it with str_replace or insert"
            parent = path.rsplit("/", 1)[0] or "/"
            self.session.exec(["mkdir", "-p", parent], timeout=60)
            return self._write(path, str(args.get("file_text", "")), None, f"created {path}")
        if data is None:
            return f"error: {path} does not exist or is not a regular file"
        text = data.decode("utf-8", errors="replace")
        if command == "str_replace":
            old, new = str(args["old_str"]), str(args.get("new_str", ""))
            count = text.count(old)
            if count != 1:
                return f"error: old_str occurs {count} times in {path}; it must occur exactly once"
            return self._write(path, text.replace(old, new), data, f"edited {path}")
        line = int(args["insert_line"])
        lines = text.splitlines(keepends=True)
        if not 0 <= line <= len(lines):
            return f"error: insert_line must be between 0 and {len(lines)}"
        new = str(args.get("new_str", ""))
        lines.insert(line, new if new.endswith("\n") else new + "\n")
        return self._write(path, "".join(lines), data, f"inserted into {path} after line {line}")

    def _write(self, path: str, text: str, before: bytes | None, done: str) -> str:
        """Write ``text`` to ``path``, remembering what was there (None: nothing) for undo_edit."""
        mode = self._mode(path)
        self.session.put_files({path: (text, mode)})
        self.history.setdefault(path, []).append((before, mode))
        return done

    def _undo(self, path: str) -> str:
        if not self.history.get(path):
            return f"error: no edit of {path} to undo"
        before, mode = self.history[path].pop()
        if before is None:
            self.session.exec(["rm", "-f", path], timeout=60)
            return f"undid the creation of {path} (removed it)"
        self.session.put_files({path: (before, mode)})
        return f"undid the last edit of {path}"

    def _view(self, path: str, view_range: Any) -> str:
        """A directory: its entries two levels deep, hidden ones left out; a file: numbered lines."""
        quoted = shlex.quote(path)
        listing = self.session.exec(["sh", "-c", f"test -d {quoted} && find {quoted} -maxdepth 2 -not -name '.*' "
                                                 f"-not -path '*/.*' | sort"], timeout=60)
        if listing.ok:
            return cut(listing.output, self.max_output)
        data = self.session.get_file(path)
        if data is None:
            return f"error: {path} does not exist or is not a regular file"
        lines = data.decode("utf-8", errors="replace").splitlines()
        first, last = 1, len(lines)
        if isinstance(view_range, list) and len(view_range) == 2:
            first, last = int(view_range[0]), int(view_range[1])
            last = len(lines) if last == -1 else last
        numbered = "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(max(1, first), min(last, len(lines)) + 1))
        return cut(numbered, self.max_output)

    def _mode(self, path: str) -> int:
        """The file's current permission bits (kept across edits), or 0o644."""
        result = self.session.exec(["stat", "-c", "%a", path], timeout=60)
        try:
            return int(result.output.strip(), 8) if result.ok else 0o644
        except ValueError:
            return 0o644
