"""A private apt state under cligym's cache folder: the archive as the host's apt sources
name it, with ``deb-src`` added, its own lists and downloads. The host's apt configuration
is read, never changed: apt runs with ``APT_CONFIG`` pointing at this state's own
configuration (so not even the host's apt.conf.d is read, but for its network settings).

What it does: ``update`` the indexes, ``fetch_source`` (download and unpack a source
package) and ``download_debs`` (the binary packages a given dpkg status lacks to install
some packages, resolved by apt against a copy of that status).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from cligym.config import exclusive, home
from cligym.debian import hostsources
from cligym.debian.deb822 import field, kept_index, parse, split_version
from cligym.errors import CligymError
from cligym.models.debian import ArchiveFile, DownloadedDeb, FetchedSource
from cligym.runtime.base_image import host_apt_sources

#: Host apt settings the private state keeps: how to reach the network (proxies, TLS,
#: timeouts) and whether an old Release is accepted (a snapshot archive's).
HOST_SETTINGS = ("Acquire::http", "Acquire::https", "Acquire::ftp", "Acquire::Check-Valid-Until",
                 "Acquire::Check-Date", "Acquire::Max-ValidTime", "Acquire::Retries", "Acquire::ForceIPv4",
                 "Acquire::ForceIPv6")
UPDATE_TIMEOUT = 900.0
FETCH_TIMEOUT = 1800.0


class ArchiveError(CligymError):
    """The archive or the private apt state could not do what was asked."""


class NoAptSources(ArchiveError):
    """The host names no apt source to make the private state's from."""


class ArchiveUnreachable(ArchiveError):
    """The archive the host's sources name cannot be reached (name, connection, timeout)."""


class NoSourceIndexes(ArchiveError):
    """No Sources index (``deb-src``) could be had from the host's sources."""


class UnknownPackage(ArchiveError):
    """The archive has no such source or binary package, or not that version."""

    exit_code = 2


class FileNotServed(ArchiveError):
    """The archive lists a file it does not serve (404 and the like) or serves it wrong."""


class Unresolvable(ArchiveError):
    """apt cannot resolve the packages' dependencies against the given dpkg status."""


class UnpackFailed(ArchiveError):
    """``dpkg-source -x`` could not unpack a fetched source package."""


class AptFailed(ArchiveError):
    """apt failed in a way none of the other errors names."""


@dataclass(frozen=True)
class SourceIndex:
    """One Sources index of the private state: the file apt keeps, the repository's base
    URI (pool paths are relative to it) and its release's codename."""

    path: Path
    repo_uri: str
    codename: str


def classify(stderr: str, subject: str) -> ArchiveError:
    """The error an apt failure is, with apt's first error line as the message's reason."""
    errors = [ln[3:].strip() for ln in stderr.splitlines() if ln.startswith("E: ")]
    first = errors[0] if errors else (stderr.strip().splitlines() or ["apt failed"])[-1]
    text = " ".join(errors) + "\n" + stderr  # apt says why an index failed in a warning
    if re.search(r"Unable to (find a source package|locate package)|Can not find version|"
                 r"Version '.*' for '.*' was not found|has no installation candidate", text):
        return UnknownPackage(f"{subject}: {first}")
    if "deb-src" in text:
        return NoSourceIndexes(f"{subject}: no deb-src index is reachable from the host's apt sources ({first})")
    if re.search(r"Could not resolve|Temporary failure resolving|Could not connect|Connection failed|"
                 r"Unable to connect|timed out|Network is unreachable", text):
        return ArchiveUnreachable(f"{subject}: the archive is unreachable ({first})")
    missing = re.search(r"Failed to fetch (\S+)\s+(\d{3}\s+[^\[]*)", text)
    if missing:
        name = missing.group(1).rsplit("/", 1)[-1]
        return FileNotServed(f"{subject}: the archive does not serve {name} ({missing.group(2).strip()})")
    if "Hash Sum mismatch" in text or "File has unexpected size" in text:
        return FileNotServed(f"{subject}: a file the archive serves does not match its index ({first})")
    if re.search(r"unmet dependencies|held broken packages|Unable to correct problems", text):
        return Unresolvable(f"{subject}: apt cannot resolve the dependencies here ({first})")
    return AptFailed(f"{subject}: {first}")


def print_uris(stdout: str) -> list[ArchiveFile]:
    """The files of apt's ``--print-uris`` lines: ``'URI' name size hash``."""
    files = []
    for line in stdout.splitlines():
        match = re.match(r"^'([^']+)'\s+(\S+)\s+(\d+)\s*(\S*)", line)
        if match:
            kind, _, digest = match.group(4).partition(":")
            files.append(ArchiveFile(name=match.group(2), size=int(match.group(3)), url=match.group(1),
                                     sha256=digest if kind.upper() == "SHA256" else ""))
    return files


class AptState:
    """The private apt state at ``root`` (default: cligym's cache folder)."""

    def __init__(self, root: Path | None = None, *, host_sources: list[Path] | None = None) -> None:
        self.root = (root or home() / "apt").resolve()
        self.host_sources = host_sources
        self.config = self.root / "apt.conf"
        self.etc = self.root / "etc"
        self.state = self.root / "state"
        self.lists = self.state / "lists"
        self.status = self.state / "status"
        self.cache = self.root / "cache"
        self.scratch = self.root / "tmp"

    # -- the configuration ----------------------------------------------------------------

    def config_text(self) -> str:
        """The private configuration: every directory apt uses is this state's; the host's
        trusted keys are read, and its network settings kept."""
        lines = [
            'Dir "/";',
            f'Dir::State "{self.state}/";',
            'Dir::State::lists "lists/";',
            f'Dir::State::status "{self.status}";',
            f'Dir::Cache "{self.cache}/";',
            'Dir::Cache::archives "archives/";',
            f'Dir::Etc "{self.etc}/";',
            'Dir::Etc::sourcelist "sources.list";',
            'Dir::Etc::sourceparts "sources.list.d";',
            'Dir::Etc::trusted "/etc/apt/trusted.gpg";',
            'Dir::Etc::trustedparts "/etc/apt/trusted.gpg.d/";',
            f'Dir::Log "{self.root}/log/";',
            'APT::Sandbox::User "root";',
            'Acquire::Languages "none";',
            'Acquire::Retries "2";',
        ]
        return "\n".join(lines + self.host_settings()) + "\n"

    @staticmethod
    def host_settings() -> list[str]:
        """The host's network settings (``apt-config dump``, read only)."""
        try:
            proc = subprocess.run(["apt-config", "dump"], capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return []
        return [ln for ln in proc.stdout.splitlines()
                if ln.startswith(HOST_SETTINGS) and not ln.endswith(' "";')]

    def prepare(self) -> None:
        """Write the configuration and the sources (from the host's, every time: they
        follow the host), and make the directories apt expects."""
        files = self.host_sources if self.host_sources is not None else host_apt_sources()
        entries = hostsources.host_entries(files)
        if not entries:
            raise NoAptSources("this host names no apt source (/etc/apt/sources.list, sources.list.d) "
                               "to read the archive from")
        for folder in (self.etc / "sources.list.d", self.lists / "partial", self.cache / "archives" / "partial",
                       self.scratch, self.root / "log"):
            folder.mkdir(parents=True, exist_ok=True)
        (self.etc / "sources.list.d" / "host.sources").write_text(hostsources.render(entries))
        if not self.status.exists():
            self.status.write_text("")
        self.config.write_text(self.config_text())

    def run(self, args: list[str], *, cwd: Path | None = None, timeout: float = FETCH_TIMEOUT,
            subject: str = "apt") -> subprocess.CompletedProcess[str]:
        """Run an apt tool under the private state; an apt failure raises its ArchiveError."""
        if not self.config.exists():
            self.prepare()
        env = dict(os.environ, APT_CONFIG=str(self.config), LC_ALL="C.UTF-8", LANGUAGE="",
                   DEBIAN_FRONTEND="noninteractive")
        try:
            proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            raise ArchiveUnreachable(f"{subject}: {args[0]} did not finish in {timeout:.0f} s") from exc
        except OSError as exc:
            raise AptFailed(f"{subject}: cannot run {args[0]}: {exc}") from exc
        if proc.returncode != 0:
            raise classify(proc.stderr, subject)
        return proc

    # -- the indexes ----------------------------------------------------------------------

    def update(self) -> list[SourceIndex]:
        """Download the indexes (apt-get update under the private state); the Sources
        indexes it has then. apt reports a failed index as a warning: when no Sources
        index is there after it, say why."""
        self.prepare()
        with exclusive(self.root / "update.lock"):
            proc = self.run(["apt-get", "update", "-q"], timeout=UPDATE_TIMEOUT, subject="apt-get update")
        indexes = self.source_indexes()
        if not indexes:
            reason = classify(proc.stderr, "apt-get update")
            if isinstance(reason, ArchiveUnreachable):
                raise reason
            raise NoSourceIndexes("no deb-src index is reachable from the host's apt sources "
                                  f"({reason if proc.stderr.strip() else 'apt fetched none'})")
        return indexes

    def source_indexes(self) -> list[SourceIndex]:
        """The Sources indexes the private state has (none before an update)."""
        if not self.config.exists():
            return []
        proc = self.run(["apt-get", "indextargets", "--format", "$(FILENAME)\t$(REPO_URI)\t$(CODENAME)",
                         "Created-By: Sources"], timeout=120, subject="apt-get indextargets")
        found = []
        for line in proc.stdout.splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and (kept := kept_index(Path(parts[0]))) is not None:
                found.append(SourceIndex(kept, parts[1], parts[2]))
        return found

    def ensure_updated(self) -> list[SourceIndex]:
        """The Sources indexes, updating first when there are none yet."""
        return self.source_indexes() or self.update()

    # -- a source package -----------------------------------------------------------------

    def fetch_source(self, source: str, version: str | None = None, *, dest: Path) -> FetchedSource:
        """Download source package ``source`` (its newest version, or ``version``) into
        ``dest`` and unpack it there with ``dpkg-source -x`` (the Debian patches applied)."""
        self.ensure_updated()
        wanted = f"{source}={version}" if version else source
        dest.mkdir(parents=True, exist_ok=True)
        args = ["apt-get", "source", "--only-source", "-q", "--download-only"]
        files = print_uris(self.run([*args, "--print-uris", wanted], cwd=dest, subject=wanted).stdout)
        dscs = [f for f in files if f.name.endswith(".dsc")]
        if not dscs:
            raise UnknownPackage(f"{wanted}: the archive lists no .dsc for it")
        self.run([*args, wanted], cwd=dest, subject=wanted)
        dsc = dest / dscs[0].name
        fields = parse(dsc.read_text(encoding="utf-8", errors="replace"))
        if not fields:
            raise UnpackFailed(f"{wanted}: {dsc.name} holds no control fields")
        got = fields[0].get("Version", version or "")
        tree = dest / f"{source}-{split_version(got)[1]}"
        if tree.exists():
            shutil.rmtree(tree)
        proc = subprocess.run(["dpkg-source", "-x", str(dsc), str(tree)], cwd=dest, capture_output=True,
                              text=True, timeout=FETCH_TIMEOUT, check=False,
                              env=dict(os.environ, LC_ALL="C.UTF-8"))
        if proc.returncode != 0 or not tree.is_dir():
            tail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            raise UnpackFailed(f"{wanted}: dpkg-source -x failed: {tail}")
        return FetchedSource(source=source, version=got, tree=str(tree), dsc=str(dsc), fields=fields[0],
                             files=files)

    # -- binary packages for a dpkg status ------------------------------------------------

    def download_debs(self, packages: list[str], dpkg_status: Path, *, dest: Path,
                      recommends: bool = False) -> list[DownloadedDeb]:
        """Download into ``dest`` the debs that installing ``packages`` (their Recommends
        too with ``recommends``) needs on a system whose dpkg status is ``dpkg_status`` (a
        copy is used: the file is never changed), and return them."""
        if not packages:
            return []
        subject = " ".join(packages[:3]) + (" ..." if len(packages) > 3 else "")
        flags = ["--install-recommends" if recommends else "--no-install-recommends"]
        return self._download(flags, packages, dpkg_status, dest, subject)

    def download_installed(self, dpkg_status: Path, *, dest: Path) -> list[DownloadedDeb]:
        """Download into ``dest`` the debs of the packages ``dpkg_status`` has installed, at
        their installed versions (what ``apt-get install --reinstall`` of each needs). A
        version the archive no longer serves is left out: its package then cannot be
        reinstalled offline, as on any machine whose archive moved on."""
        installed = installed_versions(dpkg_status.read_text(encoding="utf-8", errors="replace"))
        specs = [f"{name}={version}" for name, version in sorted(installed.items())]
        return self._download(["--reinstall", "--no-install-recommends"], specs, dpkg_status, dest,
                              "the installed packages", drop_unserved=True)

    def _download(self, flags: list[str], specs: list[str], dpkg_status: Path, dest: Path, subject: str, *,
                  drop_unserved: bool = False) -> list[DownloadedDeb]:
        """``apt-get install --download-only FLAGS SPECS`` against a copy of ``dpkg_status``:
        the files listed first (``--print-uris``), then downloaded into ``dest``. With
        ``drop_unserved`` a version the archive does not serve is dropped from ``specs``
        (apt names one at a time) rather than failing."""
        if not dpkg_status.is_file():
            raise CligymError(f"no dpkg status file at {dpkg_status}")
        self.ensure_updated()
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "partial").mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.scratch) as tmp:
            status = Path(tmp) / "status"
            shutil.copyfile(dpkg_status, status)
            empty = Path(tmp) / "archives"
            (empty / "partial").mkdir(parents=True)
            base = ["apt-get", "install", "--download-only", *flags, "-y", "-q",
                    "-o", f"Dir::State::status={status}", "-o", "Dir::Cache::pkgcache="]
            while True:
                try:
                    listed = self.run([*base, "-o", f"Dir::Cache::archives={empty}/", "--print-uris", *specs],
                                      subject=subject)
                    break
                except UnknownPackage as exc:
                    gone = re.search(r"Version '[^']+' for '([^']+)' was not found", str(exc))
                    name = gone.group(1) if gone else None
                    if not drop_unserved or name is None or not any(s.startswith(f"{name}=") for s in specs):
                        raise
                    specs = [s for s in specs if not s.startswith(f"{name}=")]
            wanted = print_uris(listed.stdout)
            self.run([*base, "-o", f"Dir::Cache::archives={dest}/", *specs], subject=subject)
        return [self._downloaded(dest / f.name, f, subject) for f in wanted]

    @staticmethod
    def _downloaded(path: Path, listed: ArchiveFile, subject: str) -> DownloadedDeb:
        if not path.is_file() or path.stat().st_size != listed.size:
            raise FileNotServed(f"{subject}: apt reported {listed.name} downloaded but it is not in place")
        name, version, arch = (path.stem.split("_") + ["", ""])[:3]
        return DownloadedDeb(package=name, version=unquote(version), architecture=arch, path=str(path),
                             size=listed.size, sha256=_sha256(path))


def installed_versions(status: str) -> dict[str, str]:
    """The installed packages of a dpkg status file, name (with ``:arch`` for a foreign or
    multi-arch same package, as apt takes it) to version."""
    found = {}
    for stanza in parse(status):
        if field(stanza, "Status").split()[-1:] != ["installed"]:
            continue
        name, arch = field(stanza, "Package"), field(stanza, "Architecture")
        same = field(stanza, "Multi-Arch") == "same" and arch not in ("", "all")
        found[f"{name}:{arch}" if same else name] = field(stanza, "Version")
    return found


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
