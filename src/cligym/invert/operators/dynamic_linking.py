"""Operators: dynamic_linking."""

from cligym.invert.operators.base import Operator, Target, register  # noqa: F401
