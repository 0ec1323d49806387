"""How many bytes of gold a repair script carries in: the one rule of offline fairness.

A task is offline-fair when its solution, proven in a fresh container with no network,
carries at most ``CARRY_LIMIT`` bytes of the gold files its breakage changed or deleted: it
repairs with what the image holds (a reinstall from the image's wheelhouse or apt
repository, a chmod, a line of configuration), not by writing the originals back. An agent
that could only restore the bytes it was never given cannot learn anything from such a task.

What counts as carried:
- every long base64 run of the script (``ENCODED``), by its decoded length, whatever it
  decodes to: an encoded payload is taken as gold's (a script has no other use for one);
- every byte of the script's other text that lies in a stretch of at least ``WINDOW`` bytes
  made of gold's pieces (``STEP`` bytes cut at every ``STEP`` of the gold version of a path
  the breakage changed or deleted): a here-document or printf of the original. The gold
  versions are read up to ``ORIGINALS_BYTES`` in all, the smallest files first.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Mapping

from cligym.models.fs import Listing
from cligym.runtime import Session
from cligym.verify.solution import gold_archive

#: The most bytes of gold a repair may carry and still be offline-fair: a line or two of
#: configuration an admin would type, never a file's contents.
CARRY_LIMIT = 256
#: The length of a verbatim stretch of a gold file that counts as carried.
WINDOW = 32
#: The stride at which gold's files are cut into pieces for the comparison (half a window).
STEP = WINDOW // 2
#: A run of base64 long enough to be a payload rather than a word or a hash.
ENCODED = re.compile(rb"[A-Za-z0-9+/]{64,}={0,2}")
#: How many bytes of gold originals the text comparison reads at most.
ORIGINALS_BYTES = 4 * 1024 * 1024


def carried_bytes(script: str, originals: Mapping[str, bytes]) -> int:
    """The bytes of gold ``script`` carries: its encoded payloads' decoded length, and its
    text found verbatim in ``originals`` (gold's versions of the changed paths)."""
    data = script.encode("utf-8", errors="replace")
    encoded = sum(len(m.group()) * 3 // 4 for m in ENCODED.finditer(data))
    text = ENCODED.sub(b" ", data)
    # gold's pieces at every STEP bytes: a verbatim stretch of WINDOW bytes holds a whole one
    pieces = {raw[j:j + STEP] for raw in originals.values() for j in range(0, len(raw) - STEP + 1, STEP)}
    covered = bytearray(len(text))
    for i in range(len(text) - STEP + 1):
        if text[i:i + STEP] in pieces:
            covered[i:i + STEP] = b"\x01" * STEP
    return encoded + sum(len(run) for run in re.findall(rb"\x01+", bytes(covered)) if len(run) >= WINDOW)


def gold_originals(gold_session: Session | None, gold_listing: Listing, paths: list[str]) -> dict[str, bytes]:
    """Gold's versions of the regular files among ``paths``, the smallest first, up to
    ``ORIGINALS_BYTES`` in all ({} without a gold session)."""
    files = sorted((p for p in paths if p in gold_listing and gold_listing[p].type == "f"),
                   key=lambda p: (gold_listing[p].size, p))
    chosen, total = [], 0
    for path in files:
        if total + gold_listing[path].size > ORIGINALS_BYTES:
            break
        chosen.append(path)
        total += gold_listing[path].size
    if gold_session is None or not chosen:
        return {}
    found = {}
    with tarfile.open(fileobj=io.BytesIO(gold_archive(gold_session, chosen)), mode="r:gz") as tar:
        for member in tar:
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None:
                found["/" + member.name.lstrip("/")] = handle.read()
    return found


def offline_fair(script: str, gold_session: Session | None, gold_listing: Listing,
                 changed_paths: list[str]) -> tuple[bool, int]:
    """(whether ``script`` is offline-fair, the gold bytes it carries) for a state whose
    breakage changed or deleted ``changed_paths``; the script is proven elsewhere."""
    carried = carried_bytes(script, gold_originals(gold_session, gold_listing, changed_paths))
    return carried <= CARRY_LIMIT, carried
