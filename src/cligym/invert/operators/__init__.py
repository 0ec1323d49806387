"""The operator registry. Importing this package imports every module of it (pkgutil),
which registers every built-in operator; ``CATEGORIES`` is derived from what registered.
"""

import importlib
import pkgutil

from cligym.invert.operators.base import (
    REGISTRY,
    GoldFiles,
    Operator,
    RestoreOperator,
    categories,
    register,
    solution_script,
)
from cligym.invert.operators.targets import (
    Embedded,
    RestoreData,
    Target,
    TargetData,
)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

#: The known category names, sorted.
CATEGORIES: tuple[str, ...] = categories()

__all__ = [
    "CATEGORIES", "REGISTRY", "Embedded", "GoldFiles", "Operator", "RestoreData", "RestoreOperator",
    "Target", "TargetData", "get", "register", "solution_script",
]


def get(names: list[str] | None = None) -> list[Operator]:
    """Operators by name; when ``names`` is empty, the default set (every operator whose
    ``default`` is true). Unknown names raise KeyError."""
    if not names:
        return [REGISTRY[n] for n in sorted(REGISTRY) if REGISTRY[n].default]
    missing = [n for n in names if n not in REGISTRY]
    if missing:
        raise KeyError(", ".join(missing))
    return [REGISTRY[n] for n in names]
