"""Incident scenarios: seeded, token-free generators of 2–4 interacting changes, each
modelled on a class of real incident. Importing this package registers every scenario
(``REGISTRY``); ``get`` picks them by name."""

from cligym.invert.scenarios import packaging, shadows, stdlib, system  # noqa: F401  (they register)
from cligym.invert.scenarios.base import REGISTRY, Plan, PlannedChange, Scenario, Site


def get(names: list[str] | None = None) -> list[Scenario]:
    """Scenarios by name (all of them when ``names`` is empty); unknown names raise KeyError."""
    if not names:
        return [REGISTRY[n] for n in sorted(REGISTRY)]
    missing = [n for n in names if n not in REGISTRY]
    if missing:
        raise KeyError(", ".join(missing))
    return [REGISTRY[n] for n in names]


__all__ = ["REGISTRY", "Plan", "PlannedChange", "Scenario", "Site", "get"]
