"""Operators: code."""

from cligym.invert.operators.base import Operator, Target, register  # noqa: F401
