"""Operators: code (one-line mutations of the project's own modules, a ΔC).

Named-only: a flipped comparison in the project's source is mutation testing, not a broken
environment, and only the oracle knows which line to flip back (not offline-fair).
"""

from __future__ import annotations

import hashlib
import io
import re
import tokenize

from cligym.invert.operators.base import Operator, register
from cligym.invert.operators.probing import module_kind
from cligym.invert.operators.targets import TargetData, pycache_glob, q

CATEGORY = "code"

#: How many lines per module a mutation offers (tried in hash order).
SLOTS = 3
SKIP = re.compile(r"__name__|TYPE_CHECKING|__version__")


def op_tokens(source: str) -> dict[int, list[str]] | None:
    """Operator tokens per line number (strings and comments are not operators)."""
    out: dict[int, list[str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.OP:
                out.setdefault(tok.start[0], []).append(tok.string)
    except (tokenize.TokenError, SyntaxError):
        return None
    return out


class MutationData(TargetData):
    slot: int  # which of the module's candidate lines (in hash order)
    line: int = 0  # the line number, and the text replaced on it
    old: str = ""
    new: str = ""


class _LineMutation(Operator):
    Data = MutationData
    default = False
    #: what a user sees of a wrong result: a failed assertion
    shows = (r"AssertionError", r"\bassert ")

    def candidate(self, line: str, ops: list[str]) -> tuple[str, str] | None:
        """(old, new) text to replace on this line, or None."""
        raise NotImplementedError

    def applies_to(self, probe, tests):
        targets = []
        for mod, path in sorted(probe.modules.items()):
            name = mod.split(".")[-1]
            if (module_kind(probe, mod) != "project" or not path.endswith(".py") or path not in probe.files
                    or name.startswith("test") or name == "conftest" or "/tests/" in path):
                continue
            touching = probe.touching(tests, "modules", mod)
            if touching:
                targets += [self.target(path=path, name=mod, touching=touching, slot=s) for s in range(SLOTS)]
        return sorted(targets, key=lambda t: (t.data.slot, len(t.touching), t.name))

    def prepare(self, target, gold):
        source = (gold.read(target.path) or b"").decode("utf-8", "replace")
        ops = op_tokens(source)
        if ops is None:
            return None
        found = []
        for number, line in enumerate(source.splitlines(), 1):
            if line.lstrip().startswith("#") or SKIP.search(line):
                continue
            change = self.candidate(line, ops.get(number, []))
            if change:
                found.append((hashlib.sha256(f"{target.path}:{number}".encode()).hexdigest(), number, change))
        found.sort()
        if target.data.slot >= len(found):
            return None
        _, number, (old, new) = found[target.data.slot]
        return target.with_data(line=number, old=old, new=new)

    def apply(self, target):
        d = target.data
        return [f"RUN sed -i {q(f'{d.line}s/{d.old}/{d.new}/')} {q(target.path)} && rm -f {pycache_glob(target.path)}"]

    def solution(self, target):
        d = target.data
        return [f"sed -i {q(f'{d.line}s/{d.new}/{d.old}/')} {q(target.path)}"]


@register
class CodeComparisonFlipped(_LineMutation):
    """An equality test in the project's code turned into its opposite, as a bad merge or
    a typo would (mutation testing)."""

    name = "code_comparison_flipped"
    symptom = "Some tests fail with wrong results, as if a condition in the library were inverted."
    hint = "Equality comparisons in the project's own source code."

    def candidate(self, line, ops):
        if line.count(" == ") == 1 and " != " not in line and ops.count("==") == 1 and "!=" not in ops:
            return " == ", " != "
        return None


@register
class CodeReturnFlipped(_LineMutation):
    """A ``return True`` turned into ``return False`` (or back) in the project's code
    (mutation testing)."""

    name = "code_return_flipped"
    symptom = "Some tests fail because a check in the library gives the opposite answer."
    hint = "Functions returning booleans in the project's own source code."

    def candidate(self, line, ops):
        match = re.match(r"\s*return (True|False)\s*(#.*)?$", line)
        if not match:
            return None
        return ("return True", "return False") if match.group(1) == "True" else ("return False", "return True")


@register
class CodeBoundaryShifted(_LineMutation):
    """A strict bound in the project's code made inclusive, the classic off-by-one
    (mutation testing)."""

    name = "code_boundary_shifted"
    symptom = "Some tests fail at edge cases: a limit in the library seems off by one."
    hint = "Ordering comparisons and bounds in the project's own source code."

    def candidate(self, line, ops):
        if line.count(" < ") == 1 and "<=" not in line and ops.count("<") == 1 and "<=" not in ops:
            return " < ", " <= "
        return None
