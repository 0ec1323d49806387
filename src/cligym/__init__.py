"""cligym: verified environment-repair tasks for coding agents."""

__version__ = "0.1.0"
