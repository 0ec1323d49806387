"""The operator model: one small class per way of breaking an environment.

An operator finds ``Target``s in a probe of the gold environment (``applies_to``), reads
what it needs from the gold image (``prepare``), and then, as pure functions of the
target, gives the Dockerfile lines that break it (``apply``, the ΔD) and the shell lines
that repair it (``solution``; ``solution_script`` alone makes them a script). ``symptom``
and ``hint`` describe it for issue texts: the symptom says what a user sees, the hint
names the area to look at, neither gives the fix.

Each category module declares ``CATEGORY`` and registers its operators with ``@register``;
the package imports every module it holds, so adding an operator is adding one class.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import ClassVar

from cligym.invert.operators.targets import (
    MAX_EMBED,
    Embedded,
    RestoreData,
    Target,
    TargetData,
    q,
)
from cligym.harness.repair import repair_script
from cligym.models.probe import Probe
from cligym.models.task import RepairStep


class GoldFiles:
    """Reads files of the gold image (from one long-lived container); cached."""

    def __init__(self, read: Callable[[str], bytes | None]) -> None:
        self._read = read
        self._cache: dict[str, bytes | None] = {}

    @classmethod
    def of_session(cls, session) -> GoldFiles:
        return cls(session.get_file)

    def read(self, path: str) -> bytes | None:
        """The bytes of a regular file (symlinks are followed), or None."""
        if path not in self._cache:
            self._cache[path] = self._read(path)
        return self._cache[path]


class Operator:
    name: ClassVar[str]
    #: Set by ``register`` from the ``CATEGORY`` of the operator's module.
    category: ClassVar[str]
    symptom: ClassVar[str]
    hint: ClassVar[str]
    #: The model of this operator's target data.
    Data: ClassVar[type[TargetData]] = TargetData
    #: Operators that break every test (e.g. the interpreter) are sampled less often.
    broad: ClassVar[bool] = False
    #: Position of this operator's ΔD lines when several are combined: operators that
    #: break what later build steps need (shared libraries, the interpreter) go last.
    order: ClassVar[int] = 50
    #: Whether the search uses this operator when no operators are named. A breakage the
    #: task's verifier undoes by itself (it restores gold's test files and pytest
    #: configuration before it runs the tests) would score with nothing done, so such
    #: operators run only when named.
    default: ClassVar[bool] = True
    #: Patterns (regular expressions, matched case-insensitively) of the error text the
    #: symptom speaks of. An issue text states the symptom only when an observed F2P error
    #: matches one of them; with none, the symptom is never stated (the errors speak).
    shows: ClassVar[tuple[str, ...]] = ()
    #: How the repair is done with only what is in the image, in one sentence (may name
    #: target fields like ``{dist}``): a wheel in the local wheelhouse pip is configured
    #: with, a tool that regenerates the file, a copy a real machine also keeps. Empty: the
    #: repair needs bytes only the oracle carries, or the network; such tasks are not
    #: offline-fair.
    offline: ClassVar[str] = ""
    #: The sweeper's habit (``cligym.invert.scenarios.base.HABITS``) that undoes every state
    #: this operator makes, whatever its target ("" when none is sure to): a state of such
    #: operators alone is one the task-blind sweeper repairs. A prediction that steers the
    #: search (``Chooser.undone``); each task's difficulty is measured all the same.
    undone_by: ClassVar[str] = ""

    def target(self, *, path: str = "", name: str = "", touching: list[str] | None = None, **data) -> Target:
        """A target of this operator, its ``data`` made with the operator's ``Data`` model."""
        return Target(path=path, name=name, data=self.Data(**data), touching=list(touching or []))

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        raise NotImplementedError

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        """Read what apply/solution need from the gold image; None if it cannot be used."""
        return target

    def apply(self, target: Target) -> list[str]:
        """Dockerfile lines that break the target: by default, delete its file."""
        return [f"RUN rm -f {q(target.path)}"]

    def solution(self, target: Target) -> list[str]:
        """Shell lines that repair the target (no shebang, no ``set -e``: see solution_script)."""
        raise NotImplementedError

    def offline_repair(self, target: Target) -> str:
        """How this target's repair is done offline ("" when it cannot be): ``offline`` with
        the target filled in. Operators whose fairness depends on the target override it."""
        return fill(self.offline, target)

    def describe(self, target: Target) -> dict[str, str]:
        """Symptom and hint texts with the target filled in (never the fix)."""
        return {"symptom": fill(self.symptom, target), "hint": fill(self.hint, target)}


def fill(text: str, target: Target) -> str:
    values = {"name": target.name, "path": target.path}
    values.update({k: str(v) for k, v in target.data if v is not None})
    return text.format_map(_Missing(values))


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


class RestoreOperator(Operator):
    """Breaks one file; the solution writes the original back with its mode. ``prepare``
    refuses an empty or missing original or one too large to carry, asks ``check`` whether
    it suits (``check`` may add details), and embeds it (``RestoreData.original``)."""

    Data: ClassVar[type[TargetData]] = RestoreData

    def check(self, target: Target, raw: bytes) -> Target | None:
        """The target (with any details added) if its original ``raw`` suits, else None."""
        return target

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        raw = gold.read(target.path)
        if not raw or len(raw) > MAX_EMBED:
            return None
        checked = self.check(target, raw)
        if checked is None:
            return None
        return checked.with_data(original=Embedded.of(checked.path, raw, checked.data.mode))

    def solution(self, target: Target) -> list[str]:
        original = target.data.original
        if original is None:
            raise ValueError(f"{self.name}: target {target.key} has no original (was it prepared?)")
        return original.restore()


def solution_script(pairs: list[tuple[Operator, Target]]) -> str:
    """The repair script of a broken state made by ``pairs`` (in order of application):
    each operator's solution as one step named by its category, last applied first."""
    return repair_script([RepairStep(label=op.category, lines=op.solution(target)) for op, target in reversed(pairs)])


# ---- the registry ----------------------------------------------------------------------

REGISTRY: dict[str, Operator] = {}
#: Category name -> the module that declares it (a category lives in one module).
DECLARED: dict[str, str] = {}
CATEGORY_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


def register(cls: type[Operator]) -> type[Operator]:
    """Register an operator under the category its module declares (``CATEGORY``)."""
    category = getattr(sys.modules[cls.__module__], "CATEGORY", None)
    if not isinstance(category, str) or not CATEGORY_NAME.fullmatch(category):
        raise ValueError(f"operator {cls.__name__}: module {cls.__module__} declares no valid CATEGORY")
    if getattr(cls, "category", category) != category:
        raise ValueError(f"operator {cls.__name__}: category {cls.category} is not its module's ({category})")
    if DECLARED.get(category, cls.__module__) != cls.__module__:
        raise ValueError(f"operator {cls.__name__}: category {category} belongs to {DECLARED[category]}")
    if not (isinstance(cls.Data, type) and issubclass(cls.Data, TargetData)):
        raise ValueError(f"operator {cls.__name__}: Data must be a TargetData model")
    if cls.name in REGISTRY:
        raise ValueError(f"operator name {cls.name} is registered twice")
    DECLARED[category] = cls.__module__
    cls.category = category
    REGISTRY[cls.name] = cls()
    return cls


def categories() -> tuple[str, ...]:
    """The categories of the registered operators, sorted."""
    return tuple(sorted({op.category for op in REGISTRY.values()}))


#: Shared objects that the shell, coreutils and the harness need. Breaking them breaks the
#: verifier itself (it could not even write a reward), so no operator may target them.
PROTECTED_LIBS = ("libc.so", "libc-", "ld-linux", "libm.so", "libtinfo", "libselinux", "libpcre",
                  "libacl", "libattr", "libgmp", "libcrypt.so", "libcap", "libdl", "libpthread")


def protected(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.startswith(PROTECTED_LIBS)
