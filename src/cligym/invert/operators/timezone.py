"""Operators: time_zone_data (the IANA zone files under /usr/share/zoneinfo that tests load,
and the /etc/localtime link that sets the local zone)."""

from __future__ import annotations

from cligym.invert.operators.base import GoldFiles, Operator, register
from cligym.invert.operators.probing import (
    file_mode,
    narrowest_paths,
    opened,
    own_touch,
)
from cligym.invert.operators.targets import Target, TargetData, q
from cligym.models.probe import Probe

CATEGORY = "time_zone_data"

ZONEINFO = "/usr/share/zoneinfo"
LOCALTIME = "/etc/localtime"
TIMEZONE_FILE = "/etc/timezone"
TZIF_MAGIC = b"TZif"
#: The zone database's source and its compiler: with them, any zone file is rebuilt.
TZDATA_SOURCE = f"{ZONEINFO}/tzdata.zi"
ZIC = ("/usr/sbin/zic", "/usr/bin/zic", "/sbin/zic")
SCRATCH = "/tmp/zoneinfo-rebuilt"
#: Zones the local time is moved to; each differs from any other zone's offset most of the year.
FOREIGN_ZONES = ("Pacific/Kiritimati", "Asia/Kathmandu", "America/St_Johns")


def _is_zone(path: str) -> bool:
    rel = path[len(ZONEINFO) + 1 :]
    return path.startswith(ZONEINFO + "/") and not rel.endswith((".tab", ".zi", ".list")) and rel not in (
        "leapseconds", "leap-seconds.list", "tzdata.zi", "SECURITY"
    )


class ZoneData(TargetData):
    zone: str
    mode: str = "644"


class _ZoneOperator(Operator):
    """Breaks one zone file; the repair compiles the database's source into a scratch
    directory and copies that one zone file back."""

    Data = ZoneData
    offline = "Compile the zone database's source (tzdata.zi) with zic and put the zone file of {zone} back."

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        """Zone files (real paths) the tests opened, directly or through /etc/localtime; none
        when the image cannot rebuild them (no ``tzdata.zi`` or no ``zic``)."""
        if TZDATA_SOURCE not in probe.files or not any(probe.files.get(z) for z in ZIC):
            return []
        return [
            self.target(path=path, name=path[len(ZONEINFO) + 1 :], touching=touching,
                        zone=path[len(ZONEINFO) + 1 :], mode=file_mode(probe, path))
            for path, touching in narrowest_paths(opened(probe, tests, _is_zone))
        ]

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        content = gold.read(target.path)
        return target if content and content.startswith(TZIF_MAGIC) else None

    def solution(self, target: Target) -> list[str]:
        built = f"{SCRATCH}/{target.data.zone}"
        return [(f"rm -rf {SCRATCH} && zic -d {SCRATCH} {TZDATA_SOURCE} && cp {q(built)} {q(target.path)} "
                f"&& chmod {target.data.mode} {q(target.path)} && rm -rf {SCRATCH}")]


@register
class ZoneinfoCorrupted(_ZoneOperator):
    """A zone file left empty by a crash in the middle of a tzdata upgrade (the file was
    truncated, its new contents never reached the disk)."""

    name = "zoneinfo_corrupted"
    symptom = "Loading the time zone {zone} fails with ValueError: Invalid TZif file: magic not found."
    hint = "the system's time zone database ({zone})"
    shows = (r"Invalid TZif", r"magic not found")

    def apply(self, target: Target) -> list[str]:
        return [f"RUN : > {q(target.path)}"]


@register
class ZoneinfoRemoved(_ZoneOperator):
    """An image-slimming step that pruned the zone database to the zones it thought in use."""

    name = "zoneinfo_removed"
    symptom = "ZoneInfo({zone!r}) raises ZoneInfoNotFoundError: 'No time zone found with key {zone}'."
    hint = "the system's time zone database ({zone})"
    shows = (r"No time zone found", r"ZoneInfoNotFoundError")

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        if any(d.name.lower() == "tzdata" for d in probe.dists):
            return []  # zoneinfo would fall back on the tzdata package
        return super().applies_to(probe, tests)


class RelinkData(TargetData):
    original: str  # the link's text
    zone: str  # the configured zone, and the zone file the link is pointed at instead
    new: str


@register
class LocaltimeRelinked(Operator):
    """/etc/localtime pointed at another zone by hand (a traveller's laptop, a copied image),
    while /etc/timezone still names the configured one."""

    name = "localtime_relinked"
    symptom = (
        "Local times are hours off: the UTC offset (utcoffset) of datetime.now().astimezone() disagrees "
        "with the configured local zone ({zone})."
    )
    hint = "the system's local time zone setting"
    shows = (r"timedelta\(", r"utcoffset", r"tzname", r"UTC[+-]\d")
    offline = "Point /etc/localtime back at the zone file of {zone}, the zone /etc/timezone names."
    Data = RelinkData

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        link = probe.files.get(LOCALTIME)
        if link is None or link.type != "l" or not link.link:
            return []
        current = probe.realpath(LOCALTIME)
        touching = []
        for test in tests:
            mine = own_touch(probe, test)
            if {LOCALTIME, TIMEZONE_FILE} & set(mine.files) or "TZ" in mine.env:
                touching.append(test)
        if not touching:
            return []
        targets = []
        for zone in FOREIGN_ZONES:
            path = f"{ZONEINFO}/{zone}"
            entry = probe.files.get(path)
            if entry is None or entry.type != "f" or probe.realpath(path) == current:
                continue
            targets.append(self.target(path=LOCALTIME, name=zone, touching=touching, original=link.link,
                                       zone=current.split("/zoneinfo/", 1)[-1], new=path))
        return targets

    def apply(self, target: Target) -> list[str]:
        return [f"RUN ln -sf {q(target.data.new)} {LOCALTIME}"]

    def solution(self, target: Target) -> list[str]:
        return [f"ln -sf {q(target.data.original)} {LOCALTIME}"]
