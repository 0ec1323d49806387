"""Images as a registry serves them: where, and by which digest.

A gold image pushed to a registry is named there ``REGISTRY/<its local repository>:<its
tag>`` and pinned by the digest of the manifest the registry stores. A task that builds
``FROM REGISTRY/repo@sha256:…`` gets those bytes or nothing: the engine checks the digest.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from cligym.errors import BadInput

#: ``host[:port][/namespace…]``: what ``docker push`` accepts before an image's repository.
_REGISTRY = re.compile(r"^(?P<host>[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:]+\])(:(?P<port>\d{1,5}))?"
                       r"(?P<path>(/[a-z0-9]+([._-][a-z0-9]+)*)*)$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def registry_name(text: str) -> str:
    """The registry as docker names it (``host[:port][/namespace]``), or BadInput with why."""
    name = text.strip().rstrip("/")
    for scheme in ("http://", "https://"):
        if name.startswith(scheme):
            raise BadInput(f"registry {text!r}: give host[:port] without {scheme} (docker chooses the scheme)")
    match = _REGISTRY.match(name)
    if not match or ("." not in match["host"] and not match["port"] and match["host"] != "localhost"):
        raise BadInput(f"registry {text!r} is not host[:port][/namespace] "
                       "(e.g. 127.0.0.1:5000 or registry.example:443/team)")
    if match["port"] and not 0 < int(match["port"]) < 65536:
        raise BadInput(f"registry {text!r}: port {match['port']} is out of range")
    return name


def is_digest(text: str) -> bool:
    return bool(_DIGEST.match(text))


class RegistryImage(BaseModel):
    """One image in one registry."""

    image: str  # the local name, e.g. cligym/gold-markupsafe:3.0.2-9a96d132aaec
    image_id: str  # the engine's id (its config's digest): the same on every engine that pulls it
    registry: str  # host[:port][/namespace]
    repository: str  # REGISTRY/<local repository>
    tag: str
    digest: str  # sha256:… of the manifest the registry stores
    bytes: int = 0  # the compressed layers and config as the registry stores them
    pushed_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def reference(self) -> str:
        """By tag: what a person reads (a tag can be moved)."""
        return f"{self.repository}:{self.tag}"

    @property
    def pinned(self) -> str:
        """By digest: what a task builds FROM (the engine refuses other bytes)."""
        return f"{self.repository}@{self.digest}"


class RegistryIndex(BaseModel):
    """The images of a run, export or dataset that were pushed, saved beside its records."""

    schema_version: int = 1
    images: list[RegistryImage] = Field(default_factory=list)

    def find(self, image: str, registry: str | None = None) -> RegistryImage | None:
        """The newest record of ``image`` (its local name, or its pinned name as an export
        builds FROM it), in ``registry`` if given."""
        found = [r for r in self.images
                 if image in (r.image, r.pinned) and (registry is None or r.registry == registry)]
        return max(found, key=lambda r: r.pushed_at) if found else None

    def with_image(self, record: RegistryImage) -> RegistryIndex:
        """This index with ``record`` replacing any record of the same image in the same registry."""
        kept = [r for r in self.images if not (r.image == record.image and r.registry == record.registry)]
        return RegistryIndex(images=sorted([*kept, record], key=lambda r: (r.image, r.registry)))
