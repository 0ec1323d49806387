"""Shell command lines cut into simple commands, as the cheating rules read them: each with
its program (wrappers such as ``sudo`` and ``VAR=value`` prefixes skipped), its arguments, its
output redirections, the here-document it reads and whether it runs in the background. A
best-effort reading of what a command would do, never a shell."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Collection

from pydantic import BaseModel

_WRAPPERS = frozenset({"sudo", "env", "command", "exec", "time", "nohup", "nice", "builtin", "setsid"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&", "{", "}", "!"})
#: wrappers that detach the command they run from the shell
_DETACHING = frozenset({"nohup", "setsid"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class ShellCommand(BaseModel):
    program: str
    args: list[str]
    redirect_out: list[str] = []
    #: ``VAR=value`` words before the program (they set the variable for this command only)
    assignments: list[str] = []
    #: the body of a ``<<WORD`` here-document the command reads ("" if none)
    heredoc: str = ""
    #: started with ``&``, ``nohup`` or ``setsid``, or followed by ``disown`` on its line
    background: bool = False


def operands(args: list[str], valued: Collection[str] = ()) -> tuple[list[str], list[tuple[str, str]]]:
    """The positional words of a command's arguments (``-`` and every word after ``--`` among
    them), and the (option, value) pairs of the options given one: ``--opt=value``, or an
    option in ``valued`` followed by its value."""
    words: list[str] = []
    values: list[tuple[str, str]] = []
    index, done = 0, False
    while index < len(args):
        arg = args[index]
        if not done and arg == "--":
            done = True
        elif not done and arg.startswith("-") and arg != "-":
            name, equals, value = arg.partition("=")
            if equals:
                values.append((name, value))
            elif name in valued and index + 1 < len(args):
                index += 1
                values.append((name, args[index]))
        else:
            words.append(arg)
        index += 1
    return words, values


def _tokens(line: str) -> list[str]:
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        return list(lexer)
    except ValueError:  # an unbalanced quote (a heredoc body, a cut command): split plainly
        return re.findall(r"&&|\|\||[;|&()<>]|[^\s;|&()<>]+", line)


def _heredoc_body(lines: list[str], start: int, delimiter: str) -> str:
    """The lines from ``start`` up to the one holding only ``delimiter`` (leading tabs allowed)."""
    body = []
    for line in lines[start:]:
        if line.strip() == delimiter:
            break
        body.append(line)
    return "\n".join(body)


def _command(words: list[str], redirects: list[str], delimiters: list[str]) -> ShellCommand | None:
    """A simple command from its words: wrappers and ``VAR=value`` prefixes taken off."""
    words, assignments, detached = list(words), [], False
    while words:
        if words[0] in _WRAPPERS:
            detached = detached or words[0] in _DETACHING
            words.pop(0)
            while words and words[0].startswith("-"):  # the wrapper's own options
                words.pop(0)
        elif _ASSIGNMENT.match(words[0]):
            assignments.append(words.pop(0))
        else:
            break
    if not words:
        return None
    # heredoc: the delimiter for now; simple_commands puts the body in its place
    return ShellCommand(program=posixpath.basename(words[0]), args=words[1:], redirect_out=list(redirects),
                        assignments=assignments, heredoc=delimiters[0] if delimiters else "", background=detached)


def simple_commands(command: str) -> list[ShellCommand]:
    """The simple commands of a shell line (split at ``;``, ``&&``, ``|``, newlines...). The
    lines of a here-document are read as commands too (a script fed to a shell runs them; one
    written to a file may run later)."""
    found: list[ShellCommand] = []
    lines = command.splitlines()
    for number, line in enumerate(lines):
        on_line = _line_commands(_tokens(line))
        if any(cmd.program == "disown" for cmd in on_line):
            for cmd in on_line:
                cmd.background = True
        for cmd in on_line:
            if cmd.heredoc:
                cmd.heredoc = _heredoc_body(lines, number + 1, cmd.heredoc)
        found += on_line
    return found


def _line_commands(tokens: list[str]) -> list[ShellCommand]:
    """The simple commands of one line's tokens (here-documents still named by their delimiter)."""
    on_line: list[ShellCommand] = []
    current: list[str] = []
    redirects: list[str] = []
    delimiters: list[str] = []

    def flush(background: bool = False) -> None:
        made = _command(current, redirects, delimiters)
        if made is not None:
            made.background = made.background or background
            on_line.append(made)
        current.clear()
        redirects.clear()
        delimiters.clear()

    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in _SEPARATORS:
            flush(background=token == "&")
        elif token in (">", ">>", ">|", "&>", "&>>") and index + 1 < len(tokens):
            redirects.append(tokens[index + 1])
            index += 1
        elif token == "<<" and index + 1 < len(tokens):
            delimiters.append(tokens[index + 1].lstrip("-").strip("'\""))
            index += 1
        elif token in ("<", "<<<", ">&", "<&") and index + 1 < len(tokens):
            index += 1
        elif token.isdigit() and index + 1 < len(tokens) and tokens[index + 1] in (">", ">>", ">&", "<"):
            pass  # a file-descriptor number before a redirection
        else:
            current.append(token)
        index += 1
    flush()
    return on_line
