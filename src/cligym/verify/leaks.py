"""The leak scanner: does a broken image give its repair away?

It compares the broken image's filesystem with the gold image's and reports
- files the delta added or changed that should never be in a task image: VCS data,
  pip/apt caches, backup files (*.bak, *.orig, *~, ...), shell and REPL histories, and the
  task's own tests or solution;
- a copy, anywhere among the added or changed files (inside tar/zip/gzip archives too),
  of the original content of a file that the delta changed or deleted.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import tarfile
import zipfile

from cligym.harness.listing import Runner, diff_listings, read_listing
from cligym.models.fs import Finding, LeakReport, Listing
from cligym.runtime import Runtime

#: Original contents shorter than this are too common to call a copy (empty files...).
MIN_COPY_BYTES = 16
ARCHIVE = re.compile(r"\.(tar|tgz|tar\.gz|tar\.xz|tar\.bz2|gz|zip|whl)$")
NAME_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("vcs", re.compile(r"(^|/)\.(git|hg|svn)(/|$)")),
    ("pip-cache", re.compile(r"(^|/)\.cache/pip(/|$)|^/root/\.cache/|(^|/)pip-(req|install|unpack)-")),
    ("apt-cache", re.compile(r"^/var/cache/apt/(archives/.+\.deb|.+\.bin)$|^/var/lib/apt/lists/[^/]+_[^/]+$")),
    ("backup", re.compile(r"(\.bak|\.orig|\.old|\.rej|\.swp|\.save|~|\.dpkg-old|\.dpkg-dist)$")),
    ("history", re.compile(r"(^|/)\.(bash|sh|zsh|python|psql|mysql|node_repl)_history$|(^|/)\.(lesshst|viminfo)$")),
    ("task-files", re.compile(r"^/(tests|solution|oracle)(/|$)|(^|/)(solve|solution|run-tests)\.sh$")),
]


def name_findings(paths: list[str]) -> list[Finding]:
    kinds = ((path, next((kind for kind, rule in NAME_RULES if rule.search(path)), None)) for path in paths)
    return [Finding(kind=kind, path=path, detail=f"matches the {kind} rule") for path, kind in kinds if kind]


#: sha256 of original gold files, by (gold image, path): gold images do not change.
_GOLD_HASHES: dict[tuple[str, str], str] = {}


def sha256_in(run: Runner, paths: list[str]) -> dict[str, str]:
    """sha256 of regular files in a container (coreutils, so a broken Python is fine)."""
    out: dict[str, str] = {}
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        result = run(["sha256sum", "--", *chunk])
        for line in result.output.splitlines():
            digest, _, path = line.partition("  ")
            if len(digest) == 64 and path:
                out[path] = digest
    return out


def archive_member_hashes(data: bytes) -> list[str]:
    """sha256 of every member of a tar/zip/gzip archive (nested one level)."""
    hashes = []
    try:
        if data[:2] == b"PK":
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                hashes += [hashlib.sha256(zf.read(n)).hexdigest() for n in zf.namelist()]
            return hashes
        if data[:2] == b"\x1f\x8b":
            inner = gzip.decompress(data)
            hashes.append(hashlib.sha256(inner).hexdigest())
            data = inner
        with tarfile.open(fileobj=io.BytesIO(data)) as tf:
            for member in tf:
                if member.isfile():
                    handle = tf.extractfile(member)
                    if handle:
                        hashes.append(hashlib.sha256(handle.read()).hexdigest())
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError):
        pass
    return hashes


def scan(runtime: Runtime, gold_image: str, gold_listing: Listing, broken_image: str) -> LeakReport:
    """Scan ``broken_image`` (one container for all its reads) against the gold image."""
    with runtime.session(broken_image) as session:
        return scan_in(runtime, gold_image, gold_listing, session)


def scan_in(runtime: Runtime, gold_image: str, gold_listing: Listing, session) -> LeakReport:
    """``scan`` in a container of the broken image in which nothing has run yet (it only
    reads: the container stays as it was, e.g. for a run of the tests after it)."""
    return _scan(runtime, gold_image, gold_listing, lambda argv: session.exec(argv, timeout=600), session)


def _scan(runtime: Runtime, gold_image: str, gold_listing: Listing, run: Runner, session) -> LeakReport:
    broken_listing = read_listing(run, "the broken image")
    diff = diff_listings(gold_listing, broken_listing)
    report = LeakReport(**diff, now={p: broken_listing[p] for p in diff["changed"]})
    report.findings += name_findings(diff["added"] + diff["changed"])

    originals = [
        p for p in diff["changed"] + diff["deleted"]
        if gold_listing[p].type == "f" and gold_listing[p].size >= MIN_COPY_BYTES
    ]
    if not originals:
        return report
    todo = [p for p in originals if (gold_image, p) not in _GOLD_HASHES]
    for path, digest in sha256_in(lambda argv: runtime.run(gold_image, argv, timeout=600), todo).items():
        _GOLD_HASHES[(gold_image, path)] = digest
    by_hash = {_GOLD_HASHES[(gold_image, p)]: p for p in originals if (gold_image, p) in _GOLD_HASHES}
    candidates = [p for p in diff["added"] + diff["changed"] if broken_listing[p].type == "f"]
    for path, digest in sha256_in(run, candidates).items():
        source = by_hash.get(digest)
        if source and source != path:
            report.findings.append(Finding(kind="copy", path=path, detail=f"holds the original content of {source}"))
    archives = [p for p in candidates if ARCHIVE.search(p) and broken_listing[p].size < 64 * 1024 * 1024]
    for path in archives:
        data = session.get_file(path) or b""
        for digest in archive_member_hashes(data):
            if digest in by_hash:
                report.findings.append(
                    Finding(kind="copy", path=path, detail=f"archive holds the original content of {by_hash[digest]}")
                )
                break
    return report
