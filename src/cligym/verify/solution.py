"""A solution script derived from a filesystem difference against the gold image.

For a broken state whose making is not known step by step (the LLM agent's), the repair is
read off the difference: paths the delta added are removed, a path whose only change is its
mode gets its mode back with chmod, and other changed or deleted paths are restored from a
gzip'd tar of their gold versions, embedded in the script as base64.
The tar is made in a container of the gold image (``--no-recursion``: every listed path is
one entry, so a changed directory gets its mode back without its whole tree).
"""

from __future__ import annotations

import base64
import posixpath
import shlex
import textwrap
import uuid
from collections.abc import Callable

from cligym.errors import CligymError
from cligym.models.fs import LeakReport, Listing
from cligym.runtime import Session

#: The largest gold archive a solution may embed (a script must stay a script).
MAX_ARCHIVE_BYTES = 16 * 1024 * 1024
#: The gold container's scratch files of one archive (a fresh name each: attempts made at
#: once share the gold container).
SCRATCH = "/tmp/.cligym-restore-{}"


def topmost(paths: list[str]) -> list[str]:
    """The paths of ``paths`` that are not inside another one of them."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path.startswith(parent.rstrip("/") + "/") for parent in kept):
            kept.append(path)
    return kept


def gold_archive(gold_session: Session, paths: list[str]) -> bytes:
    """A tar.gz (names relative to /) of ``paths`` as they are in the gold image."""
    listing = "".join(p.lstrip("/") + "\0" for p in sorted(set(paths)))
    scratch = SCRATCH.format(uuid.uuid4().hex[:12])
    listed, archive = f"{scratch}.list", f"{scratch}.tgz"
    gold_session.put_files({listed: (listing, 0o600)})
    made = gold_session.exec(["tar", "-C", "/", "-czf", archive, "--no-recursion", "--null", "-T", listed],
                             timeout=600)
    try:
        if not made.ok:
            raise CligymError(f"could not archive the gold files: {made.output.strip()[-200:]}")
        data = gold_session.get_file(archive)
    finally:
        gold_session.exec(["rm", "-f", listed, archive], timeout=60)
    if data is None:
        raise CligymError("the gold archive vanished")
    return data


def mode_only(gold: Listing, report: LeakReport, path: str) -> bool:
    """Only the permission bits of ``path`` changed (same type, size, mtime, link target)."""
    old, new = gold[path], report.now.get(path)
    return new is not None and new.mode != old.mode and old.model_copy(update={"mode": new.mode}).same_as(new)


def derive_solution(gold_session: Session, gold_listing: Listing, report: LeakReport, *,
                    reinstall: Callable[[str], str | None] | None = None, carry_limit: int | None = None) -> str:
    """A POSIX sh script that turns the broken filesystem back into the gold one.

    ``reinstall`` maps a changed or deleted path to the line that puts it back from what the
    image holds (a reinstall of its distribution from the image's wheelhouse), None where
    nothing does; the other paths are restored from gold's bytes embedded in the script,
    which ``carry_limit`` caps (CligymError beyond it: the image alone cannot repair the state)."""
    added, changed, deleted = report.added, report.changed, report.deleted
    chmod = [p for p in changed if mode_only(gold_listing, report, p) and gold_listing[p].type in "fd"]
    restore = sorted((set(changed) - set(chmod)) | set(deleted))
    lines_of = {p: line for p in restore if reinstall and (line := reinstall(p))}
    restore = [p for p in restore if p not in lines_of]
    # a changed path that is not a directory in gold, or whose type changed (a directory that
    # became a symlink would lead tar into the link's target), is removed first
    replace = [p for p in restore if p in set(changed) and
               (gold_listing[p].type != "d" or (p in report.now and report.now[p].type != "d"))]
    remove = topmost(list(added) + replace)
    lines = [
        "#!/bin/sh",
        "# repair script derived from the filesystem difference to the gold image:",
        f"# {len(added)} added path(s) removed, {len(changed)} changed and {len(deleted)} deleted restored",
        "set -e",
    ]
    for path in remove:
        lines.append(f"rm -rf -- {shlex.quote(path)}")
    for path in chmod:
        # a leading 0 beyond four digits also clears set-id bits of directories (GNU chmod)
        lines.append(f"chmod 0{gold_listing[path].mode.zfill(4)} -- {shlex.quote(path)}")
    lines += list(dict.fromkeys(lines_of.values()))
    if restore:
        raw = sum(gold_listing[p].size for p in restore if gold_listing[p].type == "f")
        if carry_limit is not None and raw > carry_limit:
            raise CligymError(f"the image holds no copy of {raw} bytes of gold files ({', '.join(restore[:3])}), "
                              f"over the {carry_limit}-byte limit a repair may carry")
        if raw > 8 * MAX_ARCHIVE_BYTES:  # no compression gets that below the limit
            raise CligymError(f"the gold files to restore hold {raw} bytes (limit {MAX_ARCHIVE_BYTES} compressed)")
        archive = gold_archive(gold_session, restore)
        if len(archive) > MAX_ARCHIVE_BYTES:
            raise CligymError(f"the gold files to restore take {len(archive)} bytes (limit {MAX_ARCHIVE_BYTES})")
        parents = topmost([posixpath.dirname(p) for p in restore if posixpath.dirname(p) != "/"])
        if parents:
            lines.append("mkdir -p -- " + " ".join(shlex.quote(p) for p in parents))
        encoded = "\n".join(textwrap.wrap(base64.b64encode(archive).decode(), 76))
        lines += ["base64 -d <<'CLIGYM_GOLD' | tar -xzf - -C /", encoded, "CLIGYM_GOLD"]
    return "\n".join(lines) + "\n"
