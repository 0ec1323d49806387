"""What the inversion stage needs of an engine (``Engine``): ``Runtime`` is the one the
product runs on; the unit tier stands a fake in for it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from cligym.runtime.common import RunResult
from cligym.runtime.sessions import Session


class Engine(Protocol):
    """Images (build, inspect, remove) and containers (one command, or a session of many)."""

    def image_exists(self, ref: str) -> bool: ...

    def image_size(self, ref: str) -> int: ...

    def remove_image(self, ref: str) -> None: ...

    def build(self, context: Path, tag: str, *, nocache: bool = False,
              labels: Mapping[str, str] | None = None) -> str: ...

    def run(self, image: str, command: str | list[str], *, timeout: float = ...,
            fetch: Iterable[str] = ()) -> RunResult: ...

    def session(self, image: str) -> AbstractContextManager[Session]: ...
