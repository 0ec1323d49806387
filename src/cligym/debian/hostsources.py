"""The host's apt sources, read (never changed) and turned into the private apt state's:
every entry with both ``deb`` and ``deb-src`` types, its Signed-By and options kept."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cligym.debian.deb822 import field, paragraphs

#: Options of a one-line ``deb [opt=value ...] uri suite components`` entry, as deb822 fields.
LIST_OPTIONS = {"arch": "Architectures", "signed-by": "Signed-By", "trusted": "Trusted",
                "check-valid-until": "Check-Valid-Until", "allow-insecure": "Allow-Insecure",
                "by-hash": "By-Hash", "pdiffs": "PDiffs"}
#: Fields of a .sources entry that the private entry does not copy (it sets Types itself).
DROPPED = {"types", "enabled"}


def list_entries(text: str) -> list[dict[str, str]]:
    """The entries of a one-line-style sources list, as deb822 fields (without Types)."""
    entries = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        kind, _, rest = line.partition(" ")
        if kind not in ("deb", "deb-src"):
            continue
        options: dict[str, str] = {}
        rest = rest.strip()
        if rest.startswith("["):
            inner, _, rest = rest[1:].partition("]")
            for option in inner.split():
                key, _, value = option.partition("=")
                key = key.rstrip("+-")
                if key in LIST_OPTIONS:
                    options[LIST_OPTIONS[key]] = value.replace(",", " ")
        parts = rest.split()
        if len(parts) < 2:
            continue
        entry = {"URIs": parts[0], "Suites": parts[1]}
        if parts[2:]:
            entry["Components"] = " ".join(parts[2:])
        entries.append(entry | options)
    return entries


def sources_entries(text: str) -> list[dict[str, str]]:
    """The enabled entries of a deb822 .sources file (without Types)."""
    entries = []
    for fields in paragraphs(text.splitlines()):
        if field(fields, "Enabled", "yes").lower() in ("no", "false", "0"):
            continue
        if not field(fields, "URIs") or not field(fields, "Suites"):
            continue
        entries.append({k: v for k, v in fields.items() if k.lower() not in DROPPED})
    return entries


def host_entries(files: Iterable[Path]) -> list[dict[str, str]]:
    """Every entry of the host's source files, once each (an entry listed once as ``deb``
    and once as ``deb-src`` is one entry here)."""
    entries: list[dict[str, str]] = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for entry in sources_entries(text) if path.suffix == ".sources" else list_entries(text):
            if entry not in entries:
                entries.append(entry)
    return entries


def render(entries: Iterable[dict[str, str]]) -> str:
    """A deb822 .sources text giving each entry both ``deb`` and ``deb-src`` types."""
    blocks = []
    for entry in entries:
        lines = ["Types: deb deb-src"]
        for name, value in entry.items():
            first, *rest = value.split("\n")
            lines.append(f"{name}: {first}".rstrip())
            lines += [" " + (part if part.strip() else ".") for part in rest]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n" if blocks else ""
