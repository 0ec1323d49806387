"""Progress reporting that library code can call without knowing about the terminal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)


class Reporter:
    """Silent by default; ``RichReporter`` draws it. Stages call ``task``/``advance``/``log``."""

    def __enter__(self) -> Reporter:
        return self

    def __exit__(self, *exc) -> None:
        pass

    @contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator[None]:
        yield

    def advance(self, steps: int = 1) -> None:
        pass

    def log(self, line: str) -> None:
        pass

    def note(self, message: str) -> None:
        pass


class RichReporter(Reporter):
    """Progress bars and spinners on stderr."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(SpinnerColumn(), TextColumn("[progress.description]{task.description}"),
                                 BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console)
        self._current = None
        self._description = ""

    def __exit__(self, *exc) -> None:
        if self.progress.live.is_started:  # stop() of a display never started still prints a line
            self.progress.stop()

    @contextmanager
    def task(self, description: str, total: int | None = None) -> Iterator[None]:
        self.progress.start()  # with the first task (an early error prints alone); later calls do nothing
        previous = (self._current, self._description)
        self._description = description
        self._current = self.progress.add_task(description, total=total)
        try:
            yield
            if total is None:
                self.progress.update(self._current, total=1, completed=1, description=description)
        finally:
            self.progress.update(self._current, description=description)
            self._current, self._description = previous

    def advance(self, steps: int = 1) -> None:
        if self._current is not None:
            self.progress.advance(self._current, steps)

    def log(self, line: str) -> None:
        if self._current is not None and line.strip():
            short = line.strip().replace("[", "(")[:110]
            self.progress.update(self._current, description=f"{self._description} [dim]{short}[/dim]")

    def note(self, message: str) -> None:
        self.progress.console.print(message)
