"""Nothing of the image runs in the verifier before the test command: every command word of
the verifier's shell files is a shell builtin, a function defined in them, or an applet of
the host's static busybox (the one every task ships), which busybox's sh and xargs run in
preference to any program on PATH. A word that is not one (``comm`` is no applet in Debian's
busybox-static) would be found on the image's PATH and run with the harness's full
capabilities. Read statically, by a small lexer for the POSIX sh these files are written in;
the few commands named by a variable are listed below, each with the reason it may run."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from cligym.harness.bundle import host_busybox

SCRIPTS = Path(__file__).resolve().parents[2] / "src" / "cligym" / "harness" / "scripts"
#: The files that run with the harness's capabilities before (or around) the test command.
CHECKED = ("verifier.sh", "debian-verifier.sh", "verdict.sh", "fingerprint.sh", "sweep.sh", "phase.sh")
#: busybox ash's builtins (``busybox sh -c help``, before the applets).
BUILTINS = set(". : [ [[ alias bg break cd chdir command continue echo eval exec exit export false fg getopts "
               "hash help history jobs kill let local printf pwd read readonly return set shift source test "
               "times trap true type ulimit umask unalias unset wait".split())
KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "case", "esac",
            "{", "}", "!", "in"}
#: Commands named by a variable, where they are allowed, and why.
DYNAMIC = {
    ("fingerprint.sh", '"$loader"'): "gold's dynamic loader (--list maps, runs nothing), run only after the "
                                     "fingerprint showed its bytes are gold's",
    ("verifier.sh", "eval"): "the test command, the verifier's first program of the image",
    ("debian-verifier.sh", '"$R_BUSYBOX"'): "the task's own busybox, running gold's test runner (restored from "
                                            "the task's copy) after the state showed to be gold's",
    ("phase.sh", '"$G/busybox"'): "the guard's own static busybox",
}
SEPARATORS = {";", "&", "&&", "||", "|", "(", ")", "\n", ";;"}
REDIRECTS = {"<", ">", ">>", "<&", ">&", "<>", ">|", "<<"}


class Word(str):
    """A word of the script as written, and whether it is plain text (no expansion)."""

    literal: bool


def word(raw: str, literal: bool) -> Word:
    w = Word(raw)
    w.literal = literal
    return w


def balanced(src: str, i: int, open_: str, close: str) -> int:
    """The index just past the ``close`` that balances the ``open_`` at ``src[i - 1]``."""
    depth = 1
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            i = src.index("'", i + 1) + 1
            continue
        if c == '"':
            i = quoted_end(src, i + 1)
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced {open_}")


def quoted_end(src: str, i: int, subs: list[str] | None = None) -> int:
    """The index past the '"' closing a double-quoted string that starts at ``i``; command
    substitutions inside go to ``subs``."""
    while src[i] != '"':
        if src[i] == "\\":
            i += 2
        elif src.startswith("$((", i):
            i = balanced(src, i + 3, "(", ")") + 1
        elif src.startswith("$(", i):
            end = balanced(src, i + 2, "(", ")")
            if subs is not None:
                subs.append(src[i + 2:end - 1])
            i = end
        elif src.startswith("${", i):
            i = balanced(src, i + 2, "{", "}")
        elif src[i] == "`":
            end = src.index("`", i + 1)
            if subs is not None:
                subs.append(src[i + 1:end])
            i = end + 1
        else:
            i += 1
    return i + 1


def lex(src: str, subs: list[str]) -> list[tuple[str, str]]:
    """("w", Word) and ("op", text) tokens; command substitutions' texts go to ``subs``."""
    out: list[tuple[str, str]] = []
    i, start, literal = 0, None, True

    def end_word():
        nonlocal start, literal
        if start is not None:
            out.append(("w", word(src[start:i], literal)))
        start, literal = None, True

    while i < len(src):
        c = src[i]
        if c in " \t":
            end_word()
            i += 1
        elif c == "\\" and src.startswith("\\\n", i):
            end_word()
            i += 2
        elif c == "#" and start is None:
            i = src.find("\n", i) if "\n" in src[i:] else len(src)
        elif c == "\n" or c in ";&|()<>":
            if c in "<>" and start is not None and src[start:i].isdigit():
                start = None  # an fd number: part of the redirection
            end_word()
            for op in (";;", "&&", "||", ">>", "<&", ">&", "<>", ">|", "<<"):
                if src.startswith(op, i):
                    break
            else:
                op = c
            out.append(("op", op))
            i += len(op)
        else:
            if start is None:
                start = i
            if c == "\\":
                i += 2
            elif c == "'":
                i = src.index("'", i + 1) + 1
            elif c == '"':
                before = len(subs)
                i = quoted_end(src, i + 1, subs)
                literal = literal and "$" not in src[start:i] and "`" not in src[start:i] and len(subs) == before
            elif src.startswith("$((", i):
                i, literal = balanced(src, i + 3, "(", ")") + 1, False
            elif src.startswith("$(", i):
                end = balanced(src, i + 2, "(", ")")
                subs.append(src[i + 2:end - 1])
                i, literal = end, False
            elif src.startswith("${", i):
                i, literal = balanced(src, i + 2, "{", "}"), False
            elif c == "$":
                i, literal = i + 1, False
            elif c == "`":
                end = src.index("`", i + 1)
                subs.append(src[i + 1:end])
                i, literal = end + 1, False
            else:
                i += 1
    end_word()
    return out


def unquote(w: str) -> str:
    return re.sub(r"""\\(.)|'([^']*)'|"([^"]*)\"""", lambda m: m.group(1) or m.group(2) or m.group(3) or "", w)


def run_words(args: list[Word]) -> list[Word]:
    """The commands a command word's arguments run in their turn (xargs, exec, command,
    timeout, env, find -exec, busybox APPLET), as words."""
    if not args:
        return []
    head, rest = unquote(args[0]), args[1:]
    if head in ("exec", "nohup", "setsid", "chroot", "nice", "time"):
        return [rest[0], *run_words(rest)] if rest else []
    if head == "command":
        return [] if not rest or unquote(rest[0]) in ("-v", "-V") else [rest[0], *run_words(rest)]
    if head == "busybox":
        return [rest[0]] if rest else []
    takes_value = {"xargs": {"-n", "-s", "-I", "-d", "-L", "-P", "-E", "-a"}, "timeout": {"-s", "-k", "-t"},
                   "env": {"-u"}}.get(head)
    if takes_value is not None:
        k = 0
        while k < len(rest) and (unquote(rest[k]).startswith("-") or (head == "env" and "=" in rest[k])):
            k += 2 if unquote(rest[k]) in takes_value else 1
        if head == "timeout":
            k += 1  # the duration
        return [rest[k], *run_words(rest[k:])] if k < len(rest) else []
    if head == "find":
        found = [rest[k + 1] for k, a in enumerate(rest[:-1]) if unquote(a) in ("-exec", "-execdir", "-ok", "-okdir")]
        return found
    return []


def analyse(src: str) -> tuple[set[str], list[tuple[Word, list[Word]]], list[str]]:
    """(functions defined, each simple command's (command word, arguments), awk programs)."""
    subs: list[str] = []
    tokens = lex(src, subs)
    functions: set[str] = set()
    commands: list[tuple[Word, list[Word]]] = []
    awks: list[str] = []
    stack: list[str] = []  # "case" (patterns next) or "arm" (commands of a case arm)
    i, start, skip_to_sep = 0, True, False
    while i < len(tokens):
        kind, text = tokens[i]
        if stack and stack[-1] == "case":  # patterns up to ")", or the case's end
            if kind == "w" and text == "esac":
                stack.pop()
                start = False
            elif kind == "op" and text == ")":
                stack[-1] = "arm"
                start = True
            i += 1
            continue
        if kind == "op":
            if text in REDIRECTS:
                i += 2
                continue
            if text == ";;" and stack and stack[-1] == "arm":
                stack[-1] = "case"
            start = start or text in SEPARATORS
            skip_to_sep = skip_to_sep and text not in (";", "\n")
            i += 1
            continue
        if skip_to_sep:
            i += 1
            continue
        if not start:
            i += 1
            continue
        if text == "case":
            stack.append("case")
            i += 3  # subject, "in"
            continue
        if text in KEYWORDS:
            if text == "for":
                skip_to_sep = True
            i += 1
            continue
        if text == "esac" and stack and stack[-1] == "arm":
            stack.pop()
            start = False
            i += 1
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", text):  # an assignment
            i += 1
            continue
        if tokens[i + 1:i + 3] == [("op", "("), ("op", ")")]:
            functions.add(text)
            i += 3
            continue
        args: list[Word] = []
        j = i + 1
        while j < len(tokens):
            k, t = tokens[j]
            if k == "op" and t in REDIRECTS:
                j += 2
                continue
            if k == "op":
                break
            args.append(t)
            j += 1
        commands.append((text, args))
        if unquote(text) == "awk":
            k = 0
            while k < len(args) and unquote(args[k]).startswith("-"):
                k += 2 if unquote(args[k]) in ("-v", "-F", "-f") else 1
            if k < len(args):
                awks.append(args[k] if not args[k].literal else unquote(args[k]))
        if unquote(text) == "eval" and args and all(a.literal for a in args):
            sub_f, sub_c, sub_a = analyse(" ".join(unquote(a) for a in args))
            functions |= sub_f
            commands += sub_c
            awks += sub_a
        start = False
        i = j
    for sub in subs:
        sub_f, sub_c, sub_a = analyse(sub)
        functions |= sub_f
        commands += sub_c
        awks += sub_a
    return functions, commands, awks


def awk_runs_commands(program: str) -> bool:
    """Whether an awk program can start a process: system(), or a pipe to or from a command."""
    text = re.sub(r'"(\\.|[^"\\])*"', '""', program)
    text = re.sub(r"/(\\.|[^/\\\n])+/", "//", text)  # regular expressions (alternation uses |)
    return bool(re.search(r"\bsystem\s*\(", text) or re.search(r"(?<!\|)\|(?!\|)", text))


@pytest.fixture(scope="module")
def applets() -> set[str]:
    busybox = str(host_busybox())  # the one every task ships
    done = subprocess.run([busybox, "--list"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def sources() -> dict[str, str]:
    return {name: (SCRIPTS / name).read_text() for name in CHECKED}


def test_every_command_word_is_a_builtin_a_function_or_a_busybox_applet(applets):
    texts = sources()
    functions = set()
    for text in texts.values():  # the verifiers source fingerprint.sh, sweep.sh and verdict.sh
        functions |= analyse(text)[0]
    wrong = []
    for name, text in texts.items():
        _, commands, _ = analyse(text)
        assert len(commands) > 5, (name, commands)
        for command, args in commands:
            for w in [command, *run_words([command, *args])]:
                if not w.literal:
                    if (name, w) not in DYNAMIC:
                        wrong.append(f"{name}: {w} (a command named by a variable)")
                    continue
                bare = unquote(w)
                if bare == "eval" and w is command and not all(a.literal for a in args):
                    if (name, "eval") not in DYNAMIC:
                        wrong.append(f"{name}: eval {' '.join(args)} (runs what a variable holds)")
                    continue
                if bare not in BUILTINS and bare not in functions and bare not in applets:
                    wrong.append(f"{name}: {bare}")
    assert not wrong, "\n".join(wrong)


def test_no_awk_program_of_the_verifier_starts_a_process():
    programs = [(SCRIPTS / "judge.awk").read_text()]
    for name, text in sources().items():
        for program in analyse(text)[2]:
            if isinstance(program, Word) and not program.literal:
                assert (name, program) == ("verdict.sh", '"$JUDGE"'), program  # judge.awk, read above
                continue
            programs.append(program)
    assert len(programs) > 4
    for program in programs:
        assert not awk_runs_commands(program), program


def test_the_checker_sees_what_it_must():
    """The lexer finds a command wherever sh would run one."""
    src = """f() { g "$@" | comm -12 a b; }
x=$(cut -c1 f | uniq) y=1 nl < in > out
case "$a" in x|y) realpath q ;; *) [ -n "$(bc)" ] && shuf ;; esac
for p in tac rev; do env -u X FOO=1 od; done
echo "$(md5sum)" 2>/dev/null | xargs -0 -r expand
timeout -s KILL 5 fold; find . -exec strings {} +; command -v nothere; command paste
"$v" arg; eval "$cmd"
awk 'BEGIN { print 1 | "sort" }'
"""
    functions, commands, awks = analyse(src)
    words = {unquote(w) for c, a in commands for w in [c, *run_words([c, *a])]}
    assert functions == {"f"}
    assert {"g", "comm", "cut", "uniq", "nl", "realpath", "[", "bc", "shuf", "env", "od", "echo", "md5sum", "xargs",
            "expand", "timeout", "fold", "find", "strings", "command", "paste", "$v", "eval", "awk"} <= words
    assert not words & {"x|y", "tac", "rev", "nothere", "a", "b", "in", "out", "q"}
    assert awk_runs_commands(awks[0])
    assert not awk_runs_commands("{ gsub(/^[ \\t]+|[ \\t]+$/, \"\", k); if (a || b) print k \"|\" }")
