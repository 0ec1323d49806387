"""The probe record: what the gold tests touch (modules, files, libraries, environment),
and the gold image's filesystem listing. Operators choose their targets from it."""

from __future__ import annotations

import posixpath
from pathlib import Path

from pydantic import BaseModel, Field, PrivateAttr

from cligym.models.fs import Entry


class Touch(BaseModel):
    modules: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    commands: list[str] = Field(default_factory=list)
    libs: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    markers: list[str] = Field(default_factory=list)
    file: str | None = None


class Dist(BaseModel):
    name: str
    version: str
    path: str | None = None
    top_level: list[str] = Field(default_factory=list)
    entry_points: list[dict[str, str]] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)


class Probe(BaseModel):
    gold_image_id: str
    tests: list[str]  # the gold tests the probe ran
    touch: dict[str, Touch]  # node ids, and "file:<module path>" for collection
    modules: dict[str, str]  # module name -> real file path
    libs: list[str]  # shared objects mapped at the end of the session
    dists: list[Dist]
    python: dict
    ssl: dict = Field(default_factory=dict)
    inifile: str | None = None
    rootdir: str = ""
    env: dict[str, str] = Field(default_factory=dict)
    files: dict[str, Entry] = Field(default_factory=dict)  # the gold filesystem listing
    workdir: str = "/testbed"  # the gold record's workdir: where the project and its tests live
    plugin: str = ""  # digest of the probe plugin that recorded it (another plugin: probe again)
    _merged: dict[str, Touch] = PrivateAttr(default_factory=dict)
    _real: dict[str, str] = PrivateAttr(default_factory=dict)

    def of(self, test: str) -> Touch:
        """What one test touches: its own run, its module's collection, and the session
        start-up (pytest itself, conftest imports), which every test goes through."""
        if test in self._merged:
            return self._merged[test]
        own = self.touch.get(test, Touch())
        parts = [own, self.touch.get(own.file or "", Touch()), self.touch.get("session", Touch())]
        merged = Touch(**{
            key: sorted(set().union(*(getattr(p, key) for p in parts)))
            for key in ("modules", "files", "env", "commands", "libs", "warnings", "markers")
        }, file=own.file)
        self._merged[test] = merged
        return merged

    def touching(self, tests: list[str], key: str, value: str) -> list[str]:
        """The tests among ``tests`` whose touch list ``key`` contains ``value``."""
        return [t for t in tests if value in getattr(self.of(t), key)]

    def realpath(self, path: str) -> str:
        """Resolve symlinks using the gold filesystem listing (answers are kept: operators
        ask for the same paths once per test that touched them)."""
        if path not in self._real:
            self._real[path] = self._resolve(path)
        return self._real[path]

    def _resolve(self, path: str) -> str:
        seen = 0
        parts = Path(path)
        while seen < 40:
            seen += 1
            entry = self.files.get(str(parts))
            if entry is None or entry.type != "l":
                # resolve a symlinked parent directory
                for parent in parts.parents:
                    pe = self.files.get(str(parent))
                    if pe is not None and pe.type == "l":
                        target = Path(pe.link) if pe.link.startswith("/") else parent.parent / pe.link
                        parts = Path(str(target)) / parts.relative_to(parent)
                        break
                else:
                    return str(parts)
                continue
            target = Path(entry.link)
            parts = target if target.is_absolute() else parts.parent / target
            parts = Path("/" + posixpath.normpath(parts).lstrip("/"))  # (normpath keeps a leading //)
        return str(parts)
