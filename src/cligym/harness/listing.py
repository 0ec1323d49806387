"""A listing of an image's filesystem (type, mode, size, mtime, link target per path),
taken with ``find`` in a container so it works in images whose Python is broken."""

from __future__ import annotations

import base64
import gzip
from collections.abc import Callable

from cligym.errors import CligymError
from cligym.models.fs import Entry, Listing
from cligym.runtime import RunResult, Runtime

#: Runs an argv in some container: a one-off ``runtime.run`` or a session's ``exec``.
Runner = Callable[[list[str]], RunResult]

#: Paths the engine mounts into every container; they say nothing about the image.
RUNTIME_PATHS = ("/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/etc/mtab", "/.dockerenv")

#: Six NUL-terminated fields per path (so no file name can break a record), compressed and
#: base64-encoded so that large filesystems stay well inside a command's output limit.
FIND = (
    "find / -xdev \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o "
    "-printf '%y\\0%m\\0%s\\0%T@\\0%p\\0%l\\0' 2>/dev/null | gzip -1 | base64 -w0"
)
FIELDS = 6


def take_listing(runtime: Runtime, image: str) -> Listing:
    return read_listing(lambda argv: runtime.run(image, argv, timeout=300), image)


def read_listing(run: Runner, what: str) -> Listing:
    result = run(["sh", "-c", FIND])
    try:
        listing = gzip.decompress(base64.b64decode(result.output.strip(), validate=True))
    except (ValueError, OSError, EOFError) as exc:
        raise CligymError(f"could not list the filesystem of {what}: {result.output.strip()[-200:] or exc}") from None
    fields = listing.decode("utf-8", errors="replace").split("\0")[:-1]
    if not fields or len(fields) % FIELDS:
        raise CligymError(f"could not list the filesystem of {what}: a malformed listing")
    listing: Listing = {}
    for i in range(0, len(fields), FIELDS):
        kind, mode, size, mtime, path, link = fields[i : i + FIELDS]
        if path not in RUNTIME_PATHS:
            listing[path] = Entry(type=kind, mode=mode, size=int(size), mtime=mtime, link=link)
    return listing


def diff_listings(gold: Listing, broken: Listing) -> dict[str, list[str]]:
    """Paths added, changed and deleted from ``gold`` to ``broken`` (directories whose
    only change is their mtime are left out)."""
    added = sorted(set(broken) - set(gold))
    deleted = sorted(set(gold) - set(broken))
    changed = []
    for path in set(gold) & set(broken):
        old, new = gold[path], broken[path]
        if old.same_as(new):
            continue
        if old.type == new.type == "d" and old.mode == new.mode:
            continue
        changed.append(path)
    return {"added": added, "changed": sorted(changed), "deleted": deleted}
