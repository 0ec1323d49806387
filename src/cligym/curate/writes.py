"""What a tool call would change on disk, as the tampering rules read it: every path a shell
command or an editor call writes, edits in place, deletes, moves away, links, chmods or makes
a directory of, with what it writes when the call shows it. A best-effort reading, like
:mod:`cligym.curate.shell`: it follows ``cd``, ``sh -c '...'`` scripts and the string
literals of inline Python/Perl scripts that open files for writing, and nothing further.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Literal

from pydantic import BaseModel

from cligym.curate.shell import ShellCommand, operands, simple_commands

Op = Literal["write", "edit", "delete", "move_from", "link", "chmod", "mkdir"]

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
_INLINE = re.compile(r"^(?:python[\d.]*|pypy[\d.]*|perl|ruby|node)$")
_COPIERS = frozenset({"cp", "install", "rsync", "scp"})
_DELETERS = frozenset({"rm", "unlink", "shred", "rmdir"})
_CHMODS = frozenset({"chmod", "chown", "chgrp", "chattr", "setfacl"})
VALUED = {  # options that take the next word as their value
    "cp": {"-S", "--suffix"}, "mv": {"-S", "--suffix"}, "ln": {"-S", "--suffix"},
    "install": {"-m", "--mode", "-o", "--owner", "-g", "--group", "-S", "--suffix"},
    "rsync": {"-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--chmod", "--chown"},
    "scp": {"-P", "-i", "-o", "-F", "-c", "-l"}, "truncate": {"-s", "--size", "-r", "--reference"},
    "sed": {"-e", "--expression", "-f", "--file", "-l", "--line-length"}, "tee": set(),
    "touch": {"-d", "--date", "-r", "--reference", "-t"},
    "perl": {"-e", "-E", "-I", "-M"}, "chmod": {"--reference"}, "chown": {"--reference"},
}
#: a string literal of an inline script, and the marks of a script that writes files
_LITERAL = re.compile(r"""(?<![\w])[rbuRBU]?(['"])([^'"\s]{2,})\1""")
#: the marks of an inline script that writes files
WRITING = re.compile(r"""['"](?:w|a|wb|ab|w\+|a\+|r\+|x|wt|at)['"]|write_(?:text|bytes)|os\.(?:replace|rename|remove|"""
                      r"""unlink|symlink|link|chmod)|shutil\.(?:copy\w*|move)|\.(?:unlink|symlink_to|rename|replace)\(""")


class Write(BaseModel):
    """One path a call changes."""

    path: str
    op: Op
    #: what is written or the edit's text (a sed script, old and new strings); None if the
    #: call does not show it (a copy, a link's target is in ``content`` for ``link``)
    content: str | None = None
    #: an in-place edit that rewrites only the first line's ``#!`` (a console script's shebang)
    shebang: bool = False
    #: a string literal of an inline script that writes files (``content`` is the script):
    #: the script may only read this one
    inline: bool = False


#: the options of cp, mv, ln and install that name the directory every source goes into
TARGET = frozenset({"-t", "--target-directory"})


def copy_operands(cmd: ShellCommand) -> tuple[list[str], str | None, bool]:
    """A copy's sources, its destination (None when it has none) and whether that was given
    by ``-t DIR`` (the destination is then a directory and every word is a source)."""
    words, values = operands(cmd.args, VALUED.get(cmd.program, set()) | TARGET)
    target = next((value for option, value in reversed(values) if option in TARGET), None)
    if target is not None:
        return words, target, True
    return words[:-1], words[-1] if len(words) > 1 else None, False


def _copy_writes(cmd: ShellCommand) -> list[Write]:
    sources, dest, target = copy_operands(cmd)
    if dest is None:
        return []
    is_dir = bool(target) or dest.endswith("/") or len(sources) > 1
    landing = [] if is_dir else [dest]
    if is_dir or "." not in posixpath.basename(dest.rstrip("/")):  # it is, or may be, a directory
        landing += [posixpath.join(dest, posixpath.basename(s.rstrip("/"))) for s in sources]
    op: Op = "link" if cmd.program == "ln" else "write"
    content = sources[0] if op == "link" and sources else None
    found = [Write(path=p, op=op, content=content) for p in landing]
    if cmd.program == "mv":
        found += [Write(path=s, op="move_from") for s in sources]
    return found


def _sed_writes(cmd: ShellCommand) -> list[Write]:
    """``sed -i`` / ``perl -i`` edits of the files they name; the script is the content."""
    in_place = any(re.match(r"^-[A-Za-z]*i", a) or a.startswith("--in-place") for a in cmd.args)
    if not in_place:
        return []
    words, pairs = operands(cmd.args, VALUED.get(cmd.program, set()))
    values = [value for _, value in pairs]
    scripted = bool(values) or any(a.startswith(("-e", "--expression")) for a in cmd.args)
    scripts, files = (values, words) if scripted else (words[:1], words[1:])
    script = "\n".join(scripts)
    shebang = bool(scripts) and all(re.match(r"^1\s*s(.)\^?#!.*\1#!.*\1\w*$", s) for s in scripts)
    return [Write(path=f, op="edit", content=script, shebang=shebang) for f in files]


def _inline_writes(cmd: ShellCommand) -> list[Write]:
    """String literals that look like paths in an inline script that writes files."""
    script = cmd.heredoc
    for index, arg in enumerate(cmd.args):
        if arg in ("-c", "-e", "-E") and index + 1 < len(cmd.args):
            script = cmd.args[index + 1]
            break
    if not script or not WRITING.search(script):
        return []
    return [Write(path=m.group(2), op="write", content=script, inline=True) for m in _LITERAL.finditer(script)
            if "/" in m.group(2) or "." in m.group(2)]


def _redirect_content(cmd: ShellCommand) -> str | None:
    if cmd.program in ("echo", "printf"):
        return " ".join(cmd.args)
    if cmd.program == "cat" and not [a for a in cmd.args if a != "-"]:
        return cmd.heredoc
    return None


def _command_writes(cmd: ShellCommand) -> list[Write]:
    """The writes of one simple command (paths as written, before ``cd`` is applied)."""
    found = [Write(path=p, op="write", content=_redirect_content(cmd)) for p in cmd.redirect_out]
    words, _ = operands(cmd.args, VALUED.get(cmd.program, set()))
    program = cmd.program
    if program in _COPIERS or program in ("mv", "ln"):
        found += _copy_writes(cmd)
    elif program == "tee":
        found += [Write(path=p, op="write") for p in words]
    elif program in ("sed", "perl"):
        found += _sed_writes(cmd)
    elif program in _DELETERS:
        found += [Write(path=p, op="delete") for p in words]
    elif program in ("truncate", "touch"):
        found += [Write(path=p, op="write", content="") for p in words]
    elif program in _CHMODS:
        found += [Write(path=p, op="chmod") for p in words[1:]]
    elif program == "mkdir":
        found += [Write(path=p, op="mkdir") for p in words]
    elif program == "dd":
        found += [Write(path=a[3:], op="write") for a in cmd.args if a.startswith("of=")]
    if _INLINE.match(program):
        found += _inline_writes(cmd)
    return found


def shell_script(cmd: ShellCommand) -> str | None:
    """The script of ``sh -c SCRIPT`` (and of ``bash -lc``, ``su -c``...), if this is one."""
    if cmd.program not in _SHELLS and cmd.program != "su":
        return None
    for index, arg in enumerate(cmd.args[:-1]):
        if re.match(r"^-[a-z]*c[a-z]*$", arg):
            return cmd.args[index + 1]
    return None


def expand(command: str, depth: int = 0) -> list[ShellCommand]:
    """The simple commands of a line and, recursively, of the ``sh -c`` scripts it runs."""
    found = []
    for cmd in simple_commands(command):
        found.append(cmd)
        script = shell_script(cmd)
        if script is not None and depth < 3:
            inner = expand(script, depth + 1)
            for sub in inner:
                sub.background = sub.background or cmd.background
            found += inner
    return found


#: an inline interpreter script anywhere on the line (``python -c``, ``python - <<EOF``, ``perl -e``)
_INLINE_TEXT = re.compile(r"\b(?:python[\d.]*|pypy[\d.]*|perl|ruby|node)\b[^\n|;&]*?(?:\s-[cEe]\s|\s-\s|\s-$|<<)",
                          re.MULTILINE)


def _text_writes(command: str) -> list[Write]:
    """Path literals of an inline script read from the whole text: a script that spans lines
    is cut by the line-wise reading of :func:`simple_commands`."""
    if not _INLINE_TEXT.search(command) or not WRITING.search(command):
        return []
    return [Write(path=m.group(2), op="write", content=command, inline=True) for m in _LITERAL.finditer(command)
            if "/" in m.group(2)]


def shell_writes(command: str) -> list[Write]:
    """Every path a shell command line changes, relative paths joined to the last ``cd``."""
    cwd: str | None = None
    found: list[Write] = []
    for cmd in expand(command):
        if cmd.program in ("cd", "pushd") and cmd.args and not cmd.args[0].startswith("-"):
            target = cmd.args[0]
            cwd = target if target.startswith("/") else (posixpath.join(cwd, target) if cwd else None)
            continue
        for write in _command_writes(cmd):
            if cwd and not write.path.startswith(("/", "~", "$")):
                write.path = posixpath.normpath(posixpath.join(cwd, write.path))
            found.append(write)
    return found + _text_writes(command)


def editor_writes(arguments: dict[str, Any]) -> list[Write]:
    """The write of an editor call (``view`` writes nothing)."""
    path, command = arguments.get("path"), arguments.get("command")
    if not isinstance(path, str) or command == "view":
        return []
    if command == "create":
        return [Write(path=path, op="write", content=str(arguments.get("file_text") or ""))]
    old, new = str(arguments.get("old_str") or ""), str(arguments.get("new_str") or "")
    if command in ("str_replace", "insert"):
        shebang = command == "str_replace" and old.startswith("#!") and new.startswith("#!") and "\n" not in new.strip()
        return [Write(path=path, op="edit", content=f"{old}\n{new}", shebang=shebang)]
    return [Write(path=path, op="edit")]
