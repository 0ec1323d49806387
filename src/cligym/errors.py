"""Errors that end a command with one clear line instead of a traceback."""

from __future__ import annotations


class CligymError(Exception):
    """An expected failure: bad input or an environment problem the user can act on.

    The CLI prints ``str(error)`` as one line on stderr and exits with ``exit_code``.
    """

    exit_code = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def fatal(self) -> bool:
        """Does it stop a run (``Fatal``)?"""
        return isinstance(self, Fatal)


class Fatal(CligymError):
    """A failure of what every later step needs (the engine, the model endpoint): a run
    stops instead of recording every remaining attempt or unit as an error, and what it
    interrupted is made again when the run is resumed."""


class BadInput(CligymError):
    """The user asked for something that cannot be done (unknown package, bad path...)."""

    exit_code = 2


class EngineUnavailable(Fatal):
    """The Docker engine cannot be reached."""

    exit_code = 3


class EngineError(CligymError):
    """The Docker engine refused or failed a request (the runtime raises this for every
    engine error, so no caller needs to know the engine's own exception types)."""


class BuildFailed(CligymError):
    """An image build failed; ``log`` holds the last lines of the build log."""

    def __init__(self, message: str, *, log: str = "") -> None:
        super().__init__(message)
        self.log = log


class GoldFailed(CligymError):
    """A gold environment could not be made from a source that looked valid."""
