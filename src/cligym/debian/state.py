"""What a repaired Debian system must share with gold, as a fingerprint spec.

The verifier compares a listing of the repaired container with gold's, line by line
(``harness/scripts/fingerprint.sh``: one ``KIND PATH`` a line; F a file by its sha256 or
that it is absent, T a whole tree, L a library folder's shared objects). For a Debian gold
the spec comes from its probe: what the tests touched, and what decides which file a
search finds —

- every file a test opened, ran or mapped, and every path it looked up (by content: a
  packaged file changed in place, emptied or replaced counts, however it was done), and of
  every program it ran whether it may run (X);
- every search-order miss and missing shared object (absent in gold: a stray file there
  is found first), and each program's name in the folders PATH lists before its own;
- the folders holding the mapped objects, and /usr/local/lib (the loader's);
- /usr/local whole, /etc/alternatives, the loader's configuration and preload file,
  dpkg's own records of alternatives and diversions, its journal and configuration, and
  apt's configuration (a source turned off or a dpkg rule must go, not be walked around).

The work tree is left out (the verifier checks the tests it uploads itself), and so are
files a repair rewrites with other bytes but the same meaning (the loader's cache: how
the loader resolves the mapped objects is compared instead, by ``m_resolved``).
"""

from __future__ import annotations

import posixpath

from cligym.models.debian_probe import DebianProbe
from cligym.models.reference import SystemState

#: Trees and files whose every change matters whatever the tests touched.
SYSTEM = (
    ("T", "/usr/local"),
    ("T", "/etc/alternatives"),
    ("T", "/var/lib/dpkg/alternatives"),
    ("F", "/var/lib/dpkg/diversions"),
    ("F", "/etc/ld.so.preload"),
    ("F", "/etc/ld.so.conf"),
    ("T", "/etc/ld.so.conf.d"),
    ("L", "/usr/local/lib"),
    ("T", "/etc/apt"),  # where apt finds packages, and what it prefers: a blocker there must go
    ("T", "/etc/dpkg"),  # dpkg's own configuration (a path-exclude rule)
    ("T", "/var/lib/dpkg/updates"),  # dpkg's journal: empty when no run was interrupted
)


def state_spec(probe: DebianProbe) -> list[str]:
    """The fingerprint spec of a Debian gold: ``KIND PATH`` lines, sorted, each once."""
    inside = probe.workdir.rstrip("/") + "/"
    touched: set[str] = set()
    programs: set[str] = set()
    folders: set[str] = set()
    for touch in probe.tests.values():
        touched.update(touch.files, touch.lookups, touch.objects, touch.missing, touch.shadows)
        programs.update(*((p.real, p.path) for p in touch.programs))
        folders.update(posixpath.dirname(o) for o in touch.objects)
    outside = [path for path in touched | programs if not path.startswith(inside) and path != probe.workdir]
    lines = {f"{kind} {path}" for kind, path in SYSTEM}
    lines |= {f"F {path}" for path in outside if path in touched}
    lines |= {f"X {path}" for path in outside if path in programs}  # its bytes and whether it may run
    lines |= {f"L {folder}" for folder in folders}
    lines |= {f"F {path}" for path in path_shadows(probe)}
    return sorted(lines)


def path_shadows(probe: DebianProbe) -> set[str]:
    """Where a program of the same name would be found first: for every program a test ran
    from a folder on gold's PATH, that name in each folder PATH lists before it (absent in
    gold: a stray program there would run instead)."""
    folders = [f.rstrip("/") or "/" for f in probe.env.get("PATH", "").split(":") if f.startswith("/")]
    found: set[str] = set()
    for touch in probe.tests.values():
        for program in touch.programs:
            folder, name = posixpath.split(program.path)
            if folder in folders:
                found |= {posixpath.join(before, name) for before in folders[:folders.index(folder)]}
    return found


def system_state(probe: DebianProbe) -> SystemState:
    """What a Debian-world task's verifier compares with gold's (``SystemState``)."""
    return SystemState(spec=state_spec(probe), objects=objects(probe))


def objects(probe: DebianProbe) -> list[str]:
    """The shared objects and programs the tests mapped or ran: how the loader resolves
    their dependencies is part of the state (``m_resolved``)."""
    found = {o for touch in probe.tests.values() for o in touch.objects}
    found |= {p.real for touch in probe.tests.values() for p in touch.programs}
    return sorted(found)
