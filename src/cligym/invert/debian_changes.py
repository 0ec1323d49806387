"""The Debian world's changes: what breaks a Debian gold environment, planned from its probe.

Each planner takes a ``DebianSite`` (the probe record of ``cligym.debian.probe`` and the
gold's test ids) and a random source, and gives one ``Plan`` of one change, or None when the
site offers no fitting target. A change is a ΔD (Dockerfile lines run as root in the gold
image), its repair (shell lines that undo it with only what is in the image: the in-image
apt repository, ``ldconfig``, ``update-alternatives``), and the tests predicted to fail (the
autopkgtest tests whose processes touched the target). The record is the Python scenarios'
one (``PlannedChange``, ``Plan``), so the pipeline checks and saves them alike.

``SCENARIOS`` plan incidents: a fault behind a blocker (a disabled apt source, an
interrupted dpkg run, a dpkg rule that leaves the file's folder out of every install, a
local diversion that sends the reinstalled file elsewhere, a pin that keeps every version
of a removed package away) that turns the obvious repair away until it is repaired first.

What a planner may take is the site's to say (``cligym.invert.debian_site``).
"""

from __future__ import annotations

import posixpath
import random
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from cligym.invert.debian_site import OFF_LIMITS, REINSTALL, DebianSite
from cligym.invert.scenarios.base import Plan, PlannedChange
from cligym.models.task import RepairStep

def _plan(name: str, change: PlannedChange, touching: list[str]) -> Plan | None:
    return Plan(scenario=name, changes=[change], repair_order=[0], touching=touching) if touching else None


def _packaged_file(site: DebianSite, rng: random.Random, options: list[tuple[str, str]], name: str, command: str,
                   symptom: str, category: str = "package_files") -> Plan | None:
    """One of ``options`` (path, owning package) changed by ``command`` (``rm -f``, ...);
    the repair reinstalls the package offline."""
    if not options:
        return None
    path, package = site.draw(rng, options, [p for p, _ in options])
    change = PlannedChange(
        name=name, category=category, dockerfile=[f"RUN {command} {shlex.quote(path)}"],
        repair=[site.reinstall(package)], places=[path],
        symptom=symptom, hint=f"check the files of {package.split(':')[0]}",
        offline="the package is reinstalled from the image's own apt repository")
    return _plan(name, change, site.test_ids(site.probe.touching(path)))


def packaged_file_removed(site: DebianSite, rng: random.Random) -> Plan | None:
    """A file a test opens, shipped by a package, deleted (a clean-up script too eager)."""
    return _packaged_file(site, rng, site.packaged() + site.packaged(objects=True),
                          "packaged_file_removed", "rm -f", "a file an installed package ships is missing")


def packaged_file_emptied(site: DebianSite, rng: random.Random) -> Plan | None:
    """A file (a shared object likelier) a test opens, shipped by a package, cut to nothing
    (a full disk during an upgrade)."""
    objects, files = site.packaged(objects=True), site.packaged()
    options = objects if objects and (not files or rng.random() < 0.6) else files
    return _packaged_file(site, rng, options, "packaged_file_emptied", "truncate -s 0",
                          "a file an installed package ships is empty")


def program_not_executable(site: DebianSite, rng: random.Random) -> Plan | None:
    """A program a test runs, shipped by a package, left without its execute bits (a
    ``chmod -R`` too wide): ``dpkg --verify`` checks contents only, so it says nothing."""
    return _packaged_file(site, rng, site.packaged(programs=True), "program_not_executable", "chmod a-x",
                          "a program an installed package ships cannot be run", category="permissions")


def package_force_removed(site: DebianSite, rng: random.Random) -> Plan | None:
    """A package the tests load removed by force, by a clean-up that kept the packages
    depending on it (``dpkg --remove --force-depends``). Its files are gone, dpkg's
    database says so, and the reinstall from the image's repository brings it back."""
    removal = _force_removal(site, rng)
    return removal[0] if removal else None


def _force_removal(site: DebianSite, rng: random.Random) -> tuple[Plan, str] | None:
    """``package_force_removed``'s plan and the package it removes."""
    options = site.packaged() + site.packaged(objects=True)
    if not options:
        return None
    path, package = site.draw(rng, options, [p for p, _ in options])
    touched = sorted({t for owned in site.probe.owned_by(package) for t in site.probe.touching(owned)})
    change = PlannedChange(
        name="package_force_removed", category="package_state",
        # dpkg keeps its former database as status-old: a copy of gold's the leak scan would
        # rightly refuse (as diversions-old)
        dockerfile=[f"RUN dpkg --remove --force-depends {shlex.quote(package)} && rm -f /var/lib/dpkg/status-old"],
        repair=[site.reinstall(package)], places=[path],
        symptom="an installed package the tests need is gone", hint="check which packages dpkg has installed",
        offline="the package is installed again from the image's own apt repository")
    plan = _plan(change.name, change, site.test_ids(touched))
    return (plan, package) if plan else None


def soname_link_removed(site: DebianSite, rng: random.Random) -> Plan | None:
    """The soname link of a library a test maps, deleted: the loader's cache still names it,
    the file it points at is still there (ldconfig makes the link again)."""
    options = []
    for real, entries in sorted(site.probe.ldconfig.items()):
        if site.owner(real) is None:
            continue
        for entry in entries:
            link = entry.partition(" => ")[2]
            usr = link if link.startswith("/usr/") else "/usr" + link
            if posixpath.basename(usr) != posixpath.basename(real) and not site.closed(usr):
                options.append((real, usr))
    if not options:
        return None
    options = sorted(set(options))
    real, link = site.draw(rng, options, [link for _, link in options], [real for real, _ in options])
    change = PlannedChange(
        name="soname_link_removed", category="dynamic_linking", dockerfile=[f"RUN rm -f {shlex.quote(link)}"],
        repair=["ldconfig"], places=[link],
        symptom="a shared library cannot be found by the loader", hint="look at the loader's links and cache",
        offline="ldconfig makes the link again from the library in the image")
    return _plan(change.name, change, site.test_ids(site.probe.touching(real)))


def search_path_shadow(site: DebianSite, rng: random.Random) -> Plan | None:
    """An empty file where a test's search (a language's module path, the loader's) looks
    before it finds the real one: a stale leftover of a local install."""
    options = sorted({(miss, found) for touch in site.probe.tests.values() for miss, found in touch.shadows.items()
                      if not miss.startswith(OFF_LIMITS) and not miss.startswith(site.probe.workdir.rstrip("/") + "/")
                      and not site.closed(miss)})
    if not options:
        return None
    miss, found = rng.choice(options)
    touching = [name for name, touch in site.probe.tests.items() if miss in touch.shadows]
    folder = posixpath.dirname(miss)
    change = PlannedChange(
        name="search_path_shadow", category="search_path",
        dockerfile=[f"RUN mkdir -p {shlex.quote(folder)} && : > {shlex.quote(miss)}"],
        repair=[f"rm -f {shlex.quote(miss)}"], places=[miss],
        symptom="a program loads a broken copy of a file it needs",
        hint=f"find every copy of {posixpath.basename(found)}",
        offline="the stray file is deleted")
    return _plan(change.name, change, site.test_ids(touching))


#: Where an image-slimming dpkg rule goes.
SLIM = "/etc/dpkg/dpkg.cfg.d/90-slim-image"
#: Where apt reads its sources (the in-image repository is one of them).
SOURCES = "/etc/apt/sources.list.d/*.list"
#: The note a release upgrade leaves above the third-party sources it turns off.
DISABLED = "# disabled on upgrade to the next release"


#: A release upgrade turned the in-image source off (commented out, as upgrade tools do with
#: third-party sources): every reinstall says the package cannot be downloaded.
SOURCE_DISABLED = PlannedChange(
    name="source_disabled", category="apt_sources", role="blocker",
    dockerfile=[f"RUN for f in {SOURCES}; do sed -i 's|^deb |# deb |; 1i {DISABLED}' \"$f\"; done"],
    repair=[f"for f in {SOURCES}; do sed -i 's|^# deb |deb |; /^{DISABLED}$/d' \"$f\"; done"],
    places=["/etc/apt/sources.list.d"], symptom="apt cannot download a package it should have",
    hint="look at where apt finds its packages", offline="the disabled source line is turned back on")
#: dpkg's journal left as an interrupted run leaves it: apt refuses every install until
#: ``dpkg --configure -a`` has run.
DPKG_INTERRUPTED = PlannedChange(
    name="dpkg_interrupted", category="dpkg_state", role="blocker",
    dockerfile=["RUN mkdir -p /var/lib/dpkg/updates && : > /var/lib/dpkg/updates/0000"],
    repair=["dpkg --configure -a"], places=["/var/lib/dpkg/updates"],
    symptom="apt refuses to install anything", hint="finish what dpkg was doing",
    offline="dpkg completes its interrupted run from its own journal")


def path_excluded(path: str) -> PlannedChange:
    """The folder of ``path`` left out of every install (an image-slimming ``path-exclude``):
    a reinstall then removes the package's other files there too."""
    folder = posixpath.dirname(path)
    return PlannedChange(
        name="dpkg_path_excluded", category="dpkg_config", role="blocker",
        dockerfile=[f"RUN echo {shlex.quote(f'path-exclude={folder}/*')} > {SLIM}"],
        repair=[f"rm -f {SLIM}"], places=[SLIM], symptom="a reinstalled package's files do not come back",
        hint="look at what dpkg is told to leave out", offline="the path-exclude rule is deleted")


def local_diversion(path: str) -> PlannedChange:
    """A local diversion of ``path`` (an admin's, for a local copy later deleted): dpkg now
    installs the package's file under another name."""
    quoted = shlex.quote(path)
    return PlannedChange(
        name="local_diversion", category="dpkg_diversions", role="blocker",
        # dpkg-divert keeps the former list as diversions-old: a copy of gold's file the leak
        # scan would rightly refuse (and no admin's image keeps it long)
        dockerfile=[f"RUN dpkg-divert --local --divert {shlex.quote(path + '.distrib')} --add {quoted} "
                    "&& rm -f /var/lib/dpkg/diversions-old"],
        repair=[f"dpkg-divert --local --rename --remove {quoted}"], places=["/var/lib/dpkg/diversions"],
        symptom="a reinstalled package's file lands under another name",
        hint="look at where dpkg puts the files it installs", offline="the local diversion is removed")


#: Where an admin's apt preferences go.
PINS = "/etc/apt/preferences.d/local-pins"


def pinned_away(package: str) -> PlannedChange:
    """Every version of ``package`` pinned below zero (an admin kept a broken release off
    the machine with ``Pin: version *``, and it stayed): apt finds no candidate for it,
    unless told the exact version."""
    name = package.split(":")[0]
    rule = f"Package: {name}\\nPin: version *\\nPin-Priority: -1\\n"  # printf makes the line ends
    return PlannedChange(
        name="package_pinned_away", category="apt_preferences", role="blocker",
        dockerfile=[f"RUN printf {shlex.quote(rule)} > {PINS}"], repair=[f"rm -f {PINS}"], places=[PINS],
        symptom="apt says a package has no installation candidate", hint="look at what apt is told to prefer",
        offline="the pin that keeps every version of the package away is deleted")


def pinned_removal(site: DebianSite, rng: random.Random) -> Plan | None:
    """A package removed by force, and every version of it pinned away long ago: the
    install an admin types first (no version) finds no candidate."""
    removal = _force_removal(site, rng)
    if removal is None:
        return None
    removed, package = removal
    fault = removed.changes[0]
    naive = REINSTALL.format(spec=package.split(":")[0])
    return Plan(scenario="pinned_removal", changes=[fault, pinned_away(package)], repair_order=[1, 0],
                naive=[RepairStep(label="naive", lines=[naive])], touching=removed.touching)


def _behind(name: str, blocker: PlannedChange | Callable[[str], PlannedChange], site: DebianSite,
            rng: random.Random) -> Plan | None:
    """A packaged file gone, emptied or made unrunnable behind ``blocker`` (or the blocker of
    its path): the repair undoes the blocker first; the naive one only reinstalls."""
    faults = [packaged_file_removed, packaged_file_emptied, program_not_executable]
    fault = None
    for planner in rng.sample(faults, len(faults)):  # the first kind with a target
        if (fault := planner(site, rng)) is not None:
            break
    if fault is None:
        return None
    removed = fault.changes[0]
    blocking = blocker if isinstance(blocker, PlannedChange) else blocker(removed.places[0])
    return Plan(scenario=name, changes=[removed, blocking], repair_order=[1, 0],
                naive=[RepairStep(label="naive", lines=removed.repair)], touching=fault.touching)


def upgrade_disabled_source(site: DebianSite, rng: random.Random) -> Plan | None:
    """A packaged file gone, and the source apt would reinstall it from turned off."""
    return _behind("upgrade_disabled_source", SOURCE_DISABLED, site, rng)


def interrupted_dpkg(site: DebianSite, rng: random.Random) -> Plan | None:
    """A packaged file gone, and dpkg's run interrupted."""
    return _behind("interrupted_dpkg", DPKG_INTERRUPTED, site, rng)


def slimmed_image(site: DebianSite, rng: random.Random) -> Plan | None:
    """A packaged file gone, and its folder excluded from installs by an image-slimming rule."""
    return _behind("slimmed_image", path_excluded, site, rng)


def stale_diversion(site: DebianSite, rng: random.Random) -> Plan | None:
    """A packaged file gone, and a local diversion of it left behind."""
    return _behind("stale_diversion", local_diversion, site, rng)


#: The Debian world's changes by name.
CHANGES: dict[str, Callable[[DebianSite, random.Random], Plan | None]] = {
    "packaged_file_removed": packaged_file_removed,
    "packaged_file_emptied": packaged_file_emptied,
    "program_not_executable": program_not_executable,
    "package_force_removed": package_force_removed,
    "soname_link_removed": soname_link_removed,
    "search_path_shadow": search_path_shadow,
}
#: The Debian world's incident scenarios (a fault behind a blocker) by name.
SCENARIOS: dict[str, Callable[[DebianSite, random.Random], Plan | None]] = {
    "upgrade_disabled_source": upgrade_disabled_source,
    "interrupted_dpkg": interrupted_dpkg,
    "slimmed_image": slimmed_image,
    "stale_diversion": stale_diversion,
    "pinned_removal": pinned_removal,
}


@dataclass(frozen=True)
class DebianScenario:
    """A Debian-world planner as the scenario degrader draws it (``scenario_search.Planner``):
    its family (one mechanism), whether the Debian sweeper is meant to fail on it, and
    whether its failing output names what it changed."""

    name: str
    family: str
    planner: Callable[[DebianSite, random.Random], Plan | None]
    resists_sweeper: bool = False
    shows_cause: bool = False

    def plan(self, site: DebianSite, rng: random.Random) -> Plan | None:
        return self.planner(site, rng)

    @property
    def incident(self) -> str:
        """The class of real incident it is modelled on: its planner's first sentence."""
        paragraph = " ".join((self.planner.__doc__ or "").strip().split("\n\n")[0].split())
        return paragraph.split(": ")[0].split(". ")[0].rstrip(".") + "."


#: Every planner of the Debian world, as the scenario degrader draws them. The single
#: changes are the fallback tier: the sweeper repairs them (``debian-sweeper.sh``).
PLANNERS: dict[str, DebianScenario] = {s.name: s for s in (
    DebianScenario("upgrade_disabled_source", "apt_source_blocked", upgrade_disabled_source, resists_sweeper=True),
    DebianScenario("interrupted_dpkg", "dpkg_journal_blocked", interrupted_dpkg),
    DebianScenario("slimmed_image", "dpkg_path_filter", slimmed_image, resists_sweeper=True),
    DebianScenario("stale_diversion", "dpkg_diversion", stale_diversion, resists_sweeper=True),
    DebianScenario("pinned_removal", "apt_pinning", pinned_removal, resists_sweeper=True),
    DebianScenario("packaged_file_removed", "package_files", packaged_file_removed),
    DebianScenario("packaged_file_emptied", "package_files", packaged_file_emptied),
    DebianScenario("program_not_executable", "permissions", program_not_executable, resists_sweeper=True),
    DebianScenario("package_force_removed", "package_state", package_force_removed),
    DebianScenario("soname_link_removed", "dynamic_linking", soname_link_removed),
    DebianScenario("search_path_shadow", "search_path", search_path_shadow),
)}
