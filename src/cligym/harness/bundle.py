"""The files every exported verifier carries from the host: the static busybox it runs
under and cligym's own scripts (package data in ``cligym/harness/scripts``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from cligym.errors import CligymError

#: The static busybox on the host that every exported task carries (Debian: busybox-static).
HOST_BUSYBOX = Path("/bin/busybox")


class NoBusybox(CligymError):
    """The host has no static busybox to ship with exported verifiers."""


def script(name: str) -> str:
    """One of the verifier's files (``cligym/harness/scripts/NAME``)."""
    return resources.files("cligym.harness").joinpath("scripts", name).read_text(encoding="utf-8")


def busybox_bytes() -> bytes:
    """The host's static busybox, or NoBusybox with what to install."""
    try:
        data = HOST_BUSYBOX.read_bytes()
    except OSError:
        raise NoBusybox(f"no {HOST_BUSYBOX}: the verifier needs a static busybox "
                        "(apt-get install busybox-static, or run scripts/setup.sh)") from None
    if not data.startswith(b"\x7fELF") or b"ld-linux" in data[:8192]:
        raise NoBusybox(f"{HOST_BUSYBOX} is not a static busybox (apt-get install busybox-static)")
    return data
