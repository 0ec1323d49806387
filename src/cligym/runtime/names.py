"""Every name cligym gives an image or a container, in one place.

Two kinds of image, told apart by name alone:

- **cache** images (the base image, gold images): named by content, shared by every
  process that needs the same environment, on this host or another one sharing the
  engine. No run removes one; ``cligym clean --images --cache DAYS`` prunes them by age.
- **scratch** images (a broken state, a task's image, a successor, a re-check, a task
  image to push): named with the run id of the process that makes them, used by that
  process alone and removed by it; a killed run's are removed by the reaper.

Containers are all scratch: ``container_name`` carries the run id too.
"""

from __future__ import annotations

import re
import uuid
from enum import Enum

from cligym.runtime.owner import run_id

PREFIX = "cligym/"


class ImageKind(Enum):
    """What an image is for: its repository prefix, and whether it is scratch."""

    BASE = ("base:", False)
    GOLD = ("gold-", False)
    BROKEN = ("broken-", True)
    VALIDATE = ("validate-", True)
    ROLLOUT = ("rollout-", True)
    RECHECK = ("recheck:", True)
    SUCCESSOR = ("successor:", True)
    PUBLISH = ("task-", True)

    def __init__(self, stem: str, scratch: bool) -> None:
        self.stem = stem
        self.scratch = scratch

    @property
    def prefix(self) -> str:
        return PREFIX + self.stem

    def tag(self, name: str, digest: str) -> str:
        """``cligym/<kind><name>:<digest>`` — with this run's id when the kind is scratch."""
        repository = self.prefix + _clean(name) if not self.stem.endswith(":") else self.prefix[:-1]
        suffix = f"-{run_id()[:8]}" if self.scratch else ""
        return f"{repository}:{digest}{suffix}"


#: The prefixes of the scratch kinds: a dead run's images under them are reapable.
SCRATCH_PREFIXES = tuple(kind.prefix for kind in ImageKind if kind.scratch)
#: The prefixes of the cache kinds: pruned by age only (``cligym clean --images --cache``).
CACHE_PREFIXES = tuple(kind.prefix for kind in ImageKind if not kind.scratch)


def scratch(ref: str) -> bool:
    return ref.startswith(SCRATCH_PREFIXES)


def _clean(name: str) -> str:
    """A name as a repository path component allows it (lower case, at most 80 characters)."""
    return re.sub(r"[^a-z0-9_.-]", "-", name.lower()).strip("-.")[:80]


def container_name() -> str:
    """A fresh name for a container this run creates (also its ``NAME`` label)."""
    return f"cligym-{run_id()}-{uuid.uuid4().hex[:10]}"
