"""Finding and downloading a source distribution without building it.

``pip download --no-binary :all:`` prepares an sdist's metadata after downloading it, which
runs the project's build backend (its ``setup.py``) on the host. This module does only the
download: it reads the indexes and links pip is configured with (``pip config list``, which
includes the ``PIP_*`` environment variables; pip's own default index when none is set),
reads the project's page of the simple repository API (PEP 503) there, picks the sdist, and
fetches that one file, checking its hash when the page gives one. No package code runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

SDIST_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2")
#: pip's configuration keys, most specific first: the environment, then ``pip download``'s
#: own section, then the global one.
SECTIONS = (":env:", "download", "global")
#: Asks the host's pip which index it uses when none is configured (its own model of it).
DEFAULT_INDEX_QUESTION = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"


@dataclass(frozen=True)
class Link:
    """One file listed on a project page."""

    filename: str
    url: str
    sha256: str | None
    yanked: bool


@dataclass(frozen=True)
class PipSettings:
    indexes: tuple[str, ...]
    find_links: tuple[str, ...]
    cert: str | None
    timeout: float


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            names = dict(attrs)
            if names.get("href"):
                self.found.append((names["href"] or "", "data-yanked" in names))


def pip(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """The host's own pip (of the interpreter cligym runs in), with its configuration."""
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=timeout)


def _pip_output(*args: str) -> str:
    proc = pip(*args, timeout=120)
    return proc.stdout if proc.returncode == 0 else ""


@lru_cache(maxsize=1)
def pip_settings() -> PipSettings:
    """The host pip's index, extra indexes, find-links, certificate and timeout."""
    values: dict[str, str] = {}
    for line in _pip_output("config", "list").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip("'\"")

    def get(key: str) -> str | None:
        return next((values[f"{s}.{key}"] for s in SECTIONS if f"{s}.{key}" in values), None)

    indexes: list[str] = []
    if (get("no-index") or "").lower() not in ("1", "true", "yes", "on"):
        main = get("index-url") or _default_index()
        indexes = [u for u in [main, *(get("extra-index-url") or "").split()] if u]
    try:
        timeout = float(get("timeout") or get("default-timeout") or 60)
    except ValueError:
        timeout = 60.0
    return PipSettings(tuple(indexes), tuple((get("find-links") or "").split()), get("cert"), timeout)


def _default_index() -> str | None:
    """The index the host's pip uses when none is configured, as pip itself names it."""
    proc = subprocess.run([sys.executable, "-c", DEFAULT_INDEX_QUESTION], capture_output=True, text=True, timeout=120)
    url = proc.stdout.strip() if proc.returncode == 0 else ""
    return url or None


def _read(url: str, settings: PipSettings) -> tuple[bytes, str] | None:
    """The body at ``url`` and the URL relative links resolve against, or None if absent.
    A local directory is read as pip reads it: its index.html, else its file listing."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme in ("", "file"):
        path = Path(urllib.request.url2pathname(parsed.path))
        if path.is_dir():
            if (path / "index.html").is_file():
                return (path / "index.html").read_bytes(), path.as_uri() + "/"
            links = "".join(f'<a href="{urllib.parse.quote(p.name)}">{p.name}</a>' for p in sorted(path.iterdir()))
            return links.encode(), path.as_uri() + "/"
        return (path.read_bytes(), path.as_uri()) if path.is_file() else None
    try:
        return _get(url, settings, "text/html")
    except urllib.error.HTTPError as exc:
        if exc.code in (404, 410):
            return None
        raise


def _get(url: str, settings: PipSettings, accept: str) -> tuple[bytes, str]:
    """The body at an http(s) ``url`` and the URL it came from, with pip's certificate and timeout."""
    context = ssl.create_default_context(cafile=settings.cert) if settings.cert else None
    request = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=settings.timeout, context=context) as answer:
        return answer.read(), answer.geturl()


def project_links(name: str) -> list[Link] | None:
    """Every file of ``name`` listed by the configured indexes and find-links, or None when
    no index has a page for it and no link names it. Unreachable sources are skipped."""
    settings = pip_settings()
    canonical = canonicalize_name(name)
    pages = [(f"{u.rstrip('/')}/{canonical}/", True) for u in settings.indexes]
    pages += [(u if "://" in u else Path(u).resolve().as_uri(), False) for u in settings.find_links]
    links: list[Link] = []
    found_page = False
    for page, is_index in pages:
        try:
            got = _read(page, settings)
        except (OSError, ValueError):
            continue
        if got is None:
            continue
        found_page = found_page or is_index
        parser = _Anchors()
        parser.feed(got[0].decode("utf-8", errors="replace"))
        for href, yanked in parser.found:
            url, _, fragment = urllib.parse.urljoin(got[1], href).partition("#")
            filename = urllib.parse.unquote(urllib.parse.urlparse(url).path.rsplit("/", 1)[-1])
            if (parse_filename(filename) or ("",))[0] == canonical:
                sha = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else None
                links.append(Link(filename, url, sha, yanked))
    return links if links or found_page else None


@lru_cache(maxsize=64)
def upload_times(name: str) -> dict[Version, datetime]:
    """When each version of ``name`` was first uploaded, from the indexes that answer the
    simple repository API in JSON (PEP 691/700); empty when none does. Asked once per
    process (a gold's first run asks after each round whether it needs a repair; read it,
    do not change it)."""
    settings = pip_settings()
    times: dict[Version, datetime] = {}
    for index in settings.indexes:
        if urllib.parse.urlparse(index).scheme not in ("http", "https"):
            continue
        url = f"{index.rstrip('/')}/{canonicalize_name(name)}/"
        try:
            files = json.loads(_get(url, settings, "application/vnd.pypi.simple.v1+json")[0]).get("files", [])
        except (OSError, ValueError):
            continue
        for file in files:
            parsed, stamp = parse_filename(file.get("filename", "")), file.get("upload-time")
            if parsed and stamp:
                when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
                times[parsed[1]] = min(when, times.get(parsed[1], when))
    return times


def parse_filename(filename: str) -> tuple[str, Version] | None:
    """(canonical name, version) of a wheel or sdist file name, or None."""
    try:
        if filename.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(filename)
            return name, version
        if filename.endswith(SDIST_SUFFIXES):
            if filename.endswith(".tar.bz2"):
                stem = filename.removesuffix(".tar.bz2")
                base, _, raw = stem.rpartition("-")
                return canonicalize_name(base), Version(raw)
            return parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return None


def versions(links: list[Link]) -> list[str]:
    """Every version the links offer, newest first."""
    found = {parsed[1] for link in links if (parsed := parse_filename(link.filename))}
    return [str(v) for v in sorted(found, reverse=True)]


def pick_sdist(links: list[Link], specifier: str = "") -> Link | None:
    """The sdist of the newest version matching ``specifier`` (an exact ``==`` pin may be
    yanked or a pre-release; otherwise both are passed over, as pip does)."""
    spec = SpecifierSet(specifier)
    pinned = any(s.operator in ("==", "===") for s in spec)
    best: tuple[Version, Link] | None = None
    for link in links:
        parsed = parse_filename(link.filename)
        if not parsed or link.filename.endswith(".whl") or (link.yanked and not pinned):
            continue
        if not spec.contains(parsed[1], prereleases=True if pinned else None):
            continue
        if best is None or parsed[1] > best[0]:
            best = (parsed[1], link)
    return best[1] if best else None


def download(link: Link, dest_dir: Path) -> Path:
    """Fetch one file into ``dest_dir`` (atomically; its hash checked when the page gave one)."""
    got = _read(link.url, pip_settings())
    if got is None:
        raise OSError(f"{link.url} is listed but cannot be fetched")
    data = got[0]
    if link.sha256 and hashlib.sha256(data).hexdigest() != link.sha256:
        raise OSError(f"{link.filename} does not match the sha256 its index lists")
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / link.filename
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(data)
    os.replace(partial, target)
    return target
