"""A project's static metadata, read from its source tree (nothing of the project runs).

One error policy for every file read here: a file that is absent, or silent on a field, says
nothing; one that is present but does not parse as what its name says (pyproject.toml as
UTF-8 TOML, setup.cfg and tox.ini as INI) is ``BadInput``, one line naming the file and why.
INI files are read as written: no interpolation (``%`` is an ordinary character), a repeated
section or option allowed (the last wins). PKG-INFO is read with ``packaging.metadata`` (a
field it cannot read says nothing), other text as UTF-8 with U+FFFD for bytes that are not.
setup.py and noxfile.py are code, not metadata: they are parsed, never run, and one that
does not parse says nothing.
"""

from __future__ import annotations

import ast
import configparser
import re
import tarfile
import tomllib
import zipfile
from functools import cached_property
from pathlib import Path

from packaging.markers import InvalidMarker, Marker
from packaging.metadata import RawMetadata, parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cligym.errors import BadInput

_REQUIRES_TXT = re.compile(r"^[^/]+/(src/)?[^/]+\.egg-info/requires\.txt$")


def requirement(raw: str) -> Requirement | None:
    """``raw`` as a requirement, or None if it is not one."""
    try:
        return Requirement(raw)
    except (InvalidRequirement, InvalidMarker):
        return None


def table(data: object, *keys: str) -> dict:
    """The TOML table at ``keys`` in ``data``: {} where one is missing or not a table."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def parse_ini(text: str, name: str) -> configparser.ConfigParser:
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read_string(text, source=name)
    except configparser.Error as exc:
        raise BadInput(f"{name} of the project does not parse: {' '.join(str(exc).split())}") from exc
    return cfg


class SourceTree:
    """The metadata files of one unpacked project (and of the sdist ``archive`` it was
    unpacked from, if any), each read once, when first asked for."""

    def __init__(self, path: Path, archive: Path | None = None) -> None:
        self.path, self.archive = path, archive
        self._ini: dict[str, configparser.ConfigParser | None] = {}

    def _text(self, name: str, errors: str = "replace") -> str | None:
        file = self.path / name
        return file.read_text(encoding="utf-8", errors=errors) if file.is_file() else None

    @cached_property
    def pyproject(self) -> dict:
        try:
            return tomllib.loads(self._text("pyproject.toml", "strict") or "")
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise BadInput(f"pyproject.toml of the project does not parse: {exc}") from exc

    def ini(self, name: str) -> configparser.ConfigParser | None:
        """``setup.cfg`` or ``tox.ini``, or None when the project has none."""
        if name not in self._ini:
            text = self._text(name)
            self._ini[name] = parse_ini(text, name) if text is not None else None
        return self._ini[name]

    @cached_property
    def pkg_info(self) -> RawMetadata:
        text = self._text("PKG-INFO")
        return parse_email(text)[0] if text is not None else {}

    def module(self, name: str) -> ast.Module:
        """A Python file of the project parsed, never run (empty when absent or not Python)."""
        try:
            return ast.parse(self._text(name) or "")
        except (SyntaxError, ValueError):  # ValueError: null bytes
            return ast.Module(body=[], type_ignores=[])

    @cached_property
    def setup_literals(self) -> dict:
        """The keyword arguments of setup.py's ``setup()`` call that are literals (names
        bound at module level to literals are followed; anything computed is left out)."""
        tree = self.module("setup.py")
        bound = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                 for t in node.targets if isinstance(t, ast.Name)}
        out: dict = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
                for kw in node.keywords:
                    if kw.arg:
                        value = bound.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
                        try:
                            out[kw.arg] = ast.literal_eval(value)
                        except (ValueError, TypeError, SyntaxError, RecursionError):
                            pass
        return out

    def name_version(self) -> tuple[str, str]:
        """The project's name and version (``0`` when not static): from pyproject, setup.cfg,
        setup.py's literals or PKG-INFO, the first that names it; else the directory's name."""
        project = table(self.pyproject, "project")
        if project.get("name"):
            return project["name"], str(project.get("version") or "0")
        cfg = self.ini("setup.cfg")
        if cfg is not None and cfg.has_option("metadata", "name"):
            return cfg.get("metadata", "name"), cfg.get("metadata", "version", fallback="0")
        if isinstance(self.setup_literals.get("name"), str):
            return self.setup_literals["name"], str(self.setup_literals.get("version") or "0")
        if self.pkg_info.get("name"):
            return self.pkg_info["name"], self.pkg_info.get("version") or "0"
        return self.path.resolve().name, "0"

    def build_requirements(self) -> list[str]:
        """What building the project needs, from the static ``[build-system] requires`` of its
        pyproject.toml (setuptools when it has none, as pip assumes). Setuptools builds also
        get ``wheel``, which older setuptools asks for while building."""
        system = table(self.pyproject, "build-system")
        requires = [str(r) for r in system.get("requires", ["setuptools>=40.8.0"])]
        backend = system.get("build-backend", "setuptools.build_meta:__legacy__")
        named = {canonicalize_name(req.name if (req := requirement(r)) else r) for r in requires}
        if backend.startswith("setuptools.") and "wheel" not in named:
            requires.append("wheel")
        return requires

    @cached_property
    def extras(self) -> dict[str, list[str]]:
        """Every extra the project declares: pyproject, setup.cfg (setuptools' and pbr's
        sections), setup.py's literal ``extras_require``, and the metadata a build backend
        wrote into the sdist (PKG-INFO, egg-info's requires.txt)."""
        extras: dict[str, list[str]] = {}
        for key, value in table(self.pyproject, "project", "optional-dependencies").items():
            extras.setdefault(key, list(value))
        cfg = self.ini("setup.cfg")
        for section in ("options.extras_require", "extras"):  # setuptools, pbr
            if cfg is not None and cfg.has_section(section):
                for key, value in cfg.items(section):
                    extras.setdefault(key.split(":")[0], ini_lines(value))
        for key, value in (self.setup_literals.get("extras_require") or {}).items():
            listed = [str(v) for v in value] if isinstance(value, list | tuple) else []
            extras.setdefault(str(key).split(":")[0], listed)
        for key, value in [*self._pkg_info_extras().items(), *self._requires_txt().items()]:
            if value:
                extras.setdefault(key, value)
        return extras

    def _pkg_info_extras(self) -> dict[str, list[str]]:
        extras: dict[str, list[str]] = {name: [] for name in self.pkg_info.get("provides_extra", [])}
        for raw in self.pkg_info.get("requires_dist", []):
            req = requirement(raw)
            if req is None or req.marker is None:
                continue
            for extra in [e for e in extras if _in_extra(req.marker, e)]:
                extras[extra].append(f"{req.name}{'[' + ','.join(sorted(req.extras)) + ']' if req.extras else ''}"
                                     f"{req.specifier}")
        return extras

    def _requires_txt(self) -> dict[str, list[str]]:
        """The extras of the egg-info ``requires.txt`` setuptools wrote into an sdist:
        ``[name]`` or ``[name:marker]`` sections of requirement lines."""
        text = archive_text(self.archive, _REQUIRES_TXT) if self.archive else None
        extras: dict[str, list[str]] = {}
        current = None
        for line in (text or "").splitlines():
            line = line.strip()
            section = re.fullmatch(r"\[([^\]:]*)(?::(.*))?\]", line)
            if section:
                current, marker = section.group(1), section.group(2)
                extras.setdefault(current, [])
            elif line and current:
                extras[current].append(f"{line}; {marker}" if marker else line)
        return extras


def _in_extra(marker: Marker, extra: str) -> bool:
    try:
        return marker.evaluate({"extra": extra}) and not marker.evaluate({"extra": "\0none"})
    except (ValueError, KeyError):  # a comparison the marker language does not define
        return False


def ini_lines(value: str, commas: bool = False) -> list[str]:
    """The items of a multi-line ini value (also comma-separated ones when ``commas``)."""
    text = value.replace(",", "\n") if commas else value
    return [ln.split(" #")[0].strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def archive_text(archive: Path, pattern: re.Pattern) -> str | None:
    """The text of the first member of a tar or zip sdist whose name matches ``pattern``."""
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                name = next((n for n in zf.namelist() if pattern.match(n)), None)
                return zf.read(name).decode("utf-8", "replace") if name else None
        with tarfile.open(archive) as tf:
            member = next((m for m in tf.getmembers() if m.isfile() and pattern.match(m.name)), None)
            handle = tf.extractfile(member) if member else None
            return handle.read().decode("utf-8", "replace") if handle else None
    except (OSError, tarfile.TarError, zipfile.BadZipFile):
        return None
