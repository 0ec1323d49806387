"""The export formats by name: the CLI's ``--format`` choices, its help and its error line
come from here. Each names its exporter class by import path, so the command line can list
the formats without importing them (as Harbor's agent factory names its agents)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from cligym.errors import BadInput

if TYPE_CHECKING:
    from cligym.export.base import Exporter

FORMATS: dict[str, str] = {
    "harbor": "cligym.export.harbor:HarborExporter",
    "tb": "cligym.export.tb:TbExporter",
    "jsonl": "cligym.export.jsonl:JsonlExporter",
}
#: how --help names a format, where not by its value alone
LABELS = {"tb": "tb (Terminal-Bench 1.0)"}


def get_exporter(name: str) -> Exporter:
    if name not in FORMATS:
        raise BadInput(f"unknown format {name!r}; choose one of {', '.join(FORMATS)}")
    module, _, cls = FORMATS[name].partition(":")
    return getattr(import_module(module), cls)()


def formats_help() -> str:
    """'harbor, tb (Terminal-Bench 1.0) or jsonl.'"""
    labels = [LABELS.get(name, name) for name in FORMATS]
    return ", ".join(labels[:-1]) + " or " + labels[-1] + "."
