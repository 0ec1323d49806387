"""Reading the degrading agent's Dockerfile into ΔD, and the paths ΔD must never touch."""

from __future__ import annotations

import base64
import posixpath
import re

from cligym.models.gold import GoldEnv

HEREDOC = re.compile(r"<<(-?)[ \t]*([\'\"]?)([A-Za-z_][\w.-]*)\2")


def _skippable(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def parse_dockerfile(text: str) -> tuple[list[str], list[str]]:
    """The agent's Dockerfile as (RUN instructions kept for ΔD, lines left out with why).

    Continuation lines are joined as Docker joins them (blank and comment lines inside one
    are skipped). A RUN with heredocs (which the engine's classic builder cannot read) is
    kept as the same shell script, carried as base64 into ``sh``."""
    text = re.sub(r"^\s*```[\w-]*\s*$", "", text.lstrip("\ufeff"), flags=re.MULTILINE)
    lines = text.splitlines()
    kept: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(lines):
        logical, i = lines[i], i + 1
        if _skippable(logical):
            continue
        while logical.rstrip().endswith("\\"):
            logical = logical.rstrip()[:-1]
            while i < len(lines) and _skippable(lines[i]):
                i += 1
            if i == len(lines):
                break
            logical, i = logical + lines[i], i + 1
        words = logical.strip().split(None, 1)
        instruction, body = words[0].upper(), (words[1].strip() if len(words) > 1 else "")
        if instruction == "RUN" and body and HEREDOC.search(body):
            script, i = _heredoc_script(body, lines, i)
            if script is None:
                dropped.append(f"{logical.strip()[:300]}  # an unterminated heredoc")
            else:
                kept.append(f"RUN echo {base64.b64encode(script.encode()).decode()} | base64 -d | sh")
        elif instruction == "RUN" and body:
            kept.append(f"RUN {body}")
        elif instruction == "ENV":
            dropped.append(f"{logical.strip()[:300]}  # ENV cannot be undone by a repair script")
        else:
            dropped.append(f"{logical.strip()[:300]}  # only RUN instructions are kept")
    return kept, dropped


def _heredoc_script(body: str, lines: list[str], i: int) -> tuple[str | None, int]:
    """The shell script of a RUN line with heredocs whose bodies start at ``lines[i]``."""
    docs: list[tuple[list[str], str]] = []
    for dash, _, word in HEREDOC.findall(body):
        content: list[str] = []
        while i < len(lines):
            line, i = lines[i], i + 1
            if (line.lstrip("\t") if dash else line) == word:
                break
            content.append(line)
        else:
            return None, i
        docs.append((content, word))
    if len(docs) == 1 and HEREDOC.fullmatch(body):
        return "\n".join(docs[0][0]) + "\n", i  # RUN <<EOF: the body is the script
    return "\n".join([body, *(line for content, word in docs for line in [*content, word])]) + "\n", i


def touches_tests(gold: GoldEnv):
    """A predicate: is a path one of the files holding the gold tests, or a cached bytecode
    of one (pytest trusts a matching cache as much as the source)?"""
    root = gold.workdir.rstrip("/")
    files = {f"{root}/{t.split('::', 1)[0]}" for t in gold.tests}
    caches = tuple(f"{posixpath.dirname(f)}/__pycache__/{posixpath.basename(f)[:-3]}." for f in files
                   if f.endswith(".py"))
    return lambda path: path in files or (path.endswith(".pyc") and path.startswith(caches))
