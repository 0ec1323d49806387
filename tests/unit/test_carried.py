"""The one measure of offline fairness: the bytes of gold a repair script carries in."""

from __future__ import annotations

import base64

import pytest

from cligym.errors import CligymError
from cligym.models.fs import Entry, LeakReport
from cligym.verify.carried import CARRY_LIMIT, carried_bytes
from cligym.verify.solution import derive_solution

MODULE = b"".join(b"def helper_%d(value):\n    return value * %d  # scaled\n" % (n, n) for n in range(40))


def test_a_repair_from_what_the_image_holds_carries_nothing():
    script = ("#!/bin/sh\nset -e\nchmod 0755 /usr/bin/python3.11\n"
              "/opt/venv/bin/python -m pip install --no-index --find-links /opt/wheelhouse --force-reinstall pkg==1\n")
    assert carried_bytes(script, {"/site/pkg/mod.py": MODULE}) == 0


def test_an_encoded_payload_counts_whole_whatever_it_decodes_to():
    payload = base64.encodebytes(bytes(range(256)) * 8).decode()  # not gold's: it still counts
    assert carried_bytes(f"base64 -d > /x <<E\n{payload}E\n", {}) >= 2000 > CARRY_LIMIT


def test_a_here_document_of_the_original_counts_its_verbatim_stretches():
    part = MODULE[:600].decode()
    carried = carried_bytes(f"cat > /site/pkg/mod.py <<'EOF'\n{part}EOF\n", {"/site/pkg/mod.py": MODULE})
    assert 580 <= carried <= 600 and carried > CARRY_LIMIT
    # the same text, not gold's (another file changed): nothing verbatim, nothing carried
    assert carried_bytes(f"cat > /x <<'EOF'\n{part}EOF\n", {"/other": b"x" * 4000}) == 0


def test_a_short_common_stretch_is_not_a_carried_file():
    """A path or a word a script shares with the original is shorter than a window."""
    gold = b"prefix = /opt/venv\ninclude-system-site-packages = false\n" + MODULE
    assert carried_bytes("sed -i 's/true/false/' /opt/venv/pyvenv.cfg\n", {"/opt/venv/pyvenv.cfg": gold}) == 0


def _report(changed: list[str], deleted: list[str]) -> tuple[dict, LeakReport]:
    gold = {p: Entry(type="f", mode="644", size=5000, mtime="1") for p in changed + deleted}
    now = {p: Entry(type="f", mode="644", size=10, mtime="2") for p in changed}
    return gold, LeakReport(added=[], changed=changed, deleted=deleted, now=now, findings=[])


def test_a_derived_repair_reinstalls_what_the_image_holds_and_refuses_to_carry_the_rest():
    gold, report = _report(["/site/pkg/a.py"], ["/site/pkg/b.py"])
    line = "pip install --no-index --find-links /opt/wheelhouse --force-reinstall --no-deps 'pkg==1'"
    script = derive_solution(None, gold, report, reinstall=lambda p: line if p.startswith("/site/pkg/") else None,
                             carry_limit=CARRY_LIMIT)  # type: ignore[arg-type]  # no gold bytes are read
    assert script.count(line) == 1 and "base64" not in script
    gold, report = _report(["/usr/lib/python3.11/textwrap.py"], [])
    with pytest.raises(CligymError, match="holds no copy of 5000 bytes"):
        derive_solution(None, gold, report, reinstall=lambda p: None, carry_limit=CARRY_LIMIT)  # type: ignore[arg-type]
