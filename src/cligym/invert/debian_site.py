"""What the Debian world's planners choose from (``DebianSite``): the probe of a Debian gold,
its test ids, and the run's spread (which paths earlier tasks broke, which sets of tests
they fail, which paths are out of the draw).

Targets are never the system's core (``DebianProbe.core``: Essential or required
packages): every repair runs in a shell, and a broken libc or bash would leave none. Nor
the packages the checks' own tools load in a broken container (``spared``: find loads
libpcre2 through libselinux, and a listing of the broken image needs find; dpkg loads
libselinux, and every reinstall needs dpkg).
"""

from __future__ import annotations

import random
import shlex
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TypeVar

from cligym.config import DebianImage
from cligym.invert.scenarios.base import spread_draw
from cligym.models.debian_probe import DebianProbe

#: How a repair reinstalls a package offline: from the in-image apt repository, the version
#: gold has (the only one there), never asking.
REINSTALL = "DEBIAN_FRONTEND=noninteractive apt-get install --reinstall -y --no-install-recommends {spec}"
T = TypeVar("T")
#: Where a planner never puts or breaks anything: the runner's own files, the kernel's.
OFF_LIMITS = (DebianImage.CLIGYM, "/proc", "/sys", "/dev", "/tmp")


class DebianSite:
    """What the Debian planners choose from: the probe, the gold's test ids."""

    def __init__(self, probe: DebianProbe, tests: list[str], missed: set[str] | None = None,
                 spared: AbstractSet[str] = frozenset()) -> None:
        self.probe, self.tests = probe, tests
        self.missed = missed or set()  # targets a fault already missed with: never drawn again
        #: targets the planner about to plan may not draw: set by the scenario degrader (for a
        #: planner the sweeper undoes, the paths whose single fault it already undid)
        self.avoid: AbstractSet[str] = frozenset()
        #: the packages never broken: the core, and ``spared`` (the packages of the tools the
        #: checks and repairs run in the broken container)
        self.core = {p.split(":")[0] for p in probe.core} | set(spared)
        self.narrow = True  # set by the scenario degrader for every site; these planners aim narrow anyway
        #: how often the run's tasks broke each path, and how many fail each set of tests:
        #: ``draw`` prefers a new symptom (as the Python world's ``Site.pick``)
        self.used: Mapping[str, int] = {}
        self.failing: Mapping[frozenset[str], int] = {}

    def draw(self, rng: random.Random, options: Sequence[T], paths: Sequence[str],
             touched: Sequence[str] | None = None) -> T:
        """One of ``options`` (breaking ``paths``, the files whose tests it would fail:
        ``touched``, the paths themselves by default), a new symptom likelier (``spread_draw``)."""
        keys = [(path, frozenset(self.test_ids(self.probe.touching(real))))
                for path, real in zip(paths, paths if touched is None else touched, strict=True)]
        return spread_draw(rng, options, keys, self.used, self.failing)

    def closed(self, path: str) -> bool:
        """Whether ``path`` is out of this plan's draw (``missed`` or ``avoid``)."""
        return path in self.missed or path in self.avoid

    def test_ids(self, autopkgtests: list[str]) -> list[str]:
        """The gold test ids of these autopkgtest tests (an id is ``<autopkgtest>::<inner>``)."""
        names = set(autopkgtests)
        return [t for t in self.tests if t.split("::", 1)[0] in names]

    def owner(self, path: str) -> str | None:
        """The one package owning ``path``, unless a core one (None: no owner, several, or
        core)."""
        owners = self.probe.owners.get(path, [])
        if len(owners) != 1 or owners[0] not in self.probe.versions:
            return None
        return None if owners[0].split(":")[0] in self.core else owners[0]

    def reinstallable(self, package: str) -> bool:
        """Whether the in-image repository holds the installed version of ``package``."""
        return self.probe.repository.get(package.split(":")[0]) == self.probe.versions.get(package)

    def conffile(self, path: str) -> bool:
        return any(path in files for files in self.probe.conffiles.values())

    def packaged(self, objects: bool = False, programs: bool = False) -> list[tuple[str, str]]:
        """(path, package) of the touched files (``objects``: the shared objects;
        ``programs``: the programs run, as files) one non-core package that the in-image
        repository holds owns, conffiles and off-limits folders left out."""
        found = set()
        for touch in self.probe.tests.values():
            paths = [p.real for p in touch.programs] if programs else touch.objects if objects else touch.files
            for path in paths:
                package = self.owner(path)
                if package and self.reinstallable(package) and not self.conffile(path) \
                        and not path.startswith(OFF_LIMITS) and not self.closed(path):
                    found.add((path, package))
        return sorted(found)

    def reinstall(self, package: str) -> str:
        return REINSTALL.format(spec=shlex.quote(f"{package}={self.probe.versions[package]}"))
