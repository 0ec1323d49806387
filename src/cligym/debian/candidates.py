"""Candidate source packages: those the private apt state's Sources indexes list with a
``Testsuite:`` field, by team and language, and whether the archive serves every file of
each (many ``.orig`` tarballs are listed but not served here)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from cligym.debian.archive import SourceIndex
from cligym.debian.deb822 import compare_versions, field, file_lines, open_index, paragraphs, relation_names, words
from cligym.models.debian import ArchiveFile, Candidate

#: ``Testsuite: autopkgtest-pkg-<team>`` -> the language of its tests.
TEAM_LANGUAGES = {"perl": "perl", "go": "go", "nodejs": "nodejs", "ruby": "ruby", "r": "r", "rust": "rust",
                  "python": "python", "pybuild": "python", "elpa": "elisp", "dkms": "c", "octave": "octave",
                  "java": "java", "kde": "c++"}
#: For a plain ``autopkgtest`` package: build dependencies that name its language, checked in
#: this order (the first language with a marker wins); a name ending in ``-`` is a prefix.
BUILD_MARKERS: list[tuple[str, tuple[str, ...]]] = [
    ("rust", ("cargo", "dh-cargo", "rustc", "librust-")),
    ("go", ("golang-go", "golang-any", "dh-golang", "dh-sequence-golang")),
    ("nodejs", ("nodejs", "dh-nodejs", "pkg-js-tools", "dh-sequence-nodejs")),
    ("ruby", ("ruby", "gem2deb", "ruby-all-dev", "dh-ruby")),
    ("r", ("r-base-dev", "dh-r", "r-base-core")),
    ("python", ("dh-python", "python3-all", "python3-all-dev", "dh-sequence-python3", "python3-setuptools")),
    ("elisp", ("dh-elpa", "dh-sequence-elpa")),
    ("java", ("default-jdk", "javahelper", "maven-debian-helper", "gradle-debian-helper")),
    ("haskell", ("haskell-devscripts", "ghc")),
    ("ocaml", ("dh-ocaml", "ocaml")),
    ("perl", ("libmodule-build-perl", "libextutils-makemaker-perl", "perl")),
    ("c++", ("g++", "libboost-dev", "qtbase5-dev")),
    ("c", ("gcc", "libc6-dev", "cmake", "autoconf", "dh-autoreconf", "meson", "libtool")),
]
#: Sections that name a language when no build dependency does.
SECTION_LANGUAGES = {"perl": "perl", "ruby": "ruby", "python": "python", "javascript": "nodejs",
                     "golang": "go", "rust": "rust", "gnu-r": "r", "lisp": "elisp", "java": "java",
                     "haskell": "haskell", "ocaml": "ocaml"}
TEAMS = sorted(set(TEAM_LANGUAGES) | {"autopkgtest"})
LANGUAGES = sorted({lang for lang, _ in BUILD_MARKERS} | set(TEAM_LANGUAGES.values()) | {"other"})


def team_of(testsuite: list[str]) -> str:
    """The team of a Testsuite field: ``autopkgtest-pkg-<team>``'s team, else ``autopkgtest``."""
    for suite in testsuite:
        if suite.startswith("autopkgtest-pkg-"):
            return suite.removeprefix("autopkgtest-pkg-")
    return "autopkgtest"


def guess_language(build_depends: list[str], section: str, architecture: str) -> str:
    """The language of a package that runs its own tests: from its build dependencies,
    else its section, else C for an architecture-dependent package, else ``other``."""
    for language, markers in BUILD_MARKERS:
        for name in build_depends:
            if any(name.startswith(m) if m.endswith("-") else name == m for m in markers):
                return language
    by_section = SECTION_LANGUAGES.get(section.rsplit("/", 1)[-1])
    if by_section:
        return by_section
    return "c" if set(words(architecture)) - {"all"} else "other"


def candidate(fields: dict[str, str], index: SourceIndex) -> Candidate | None:
    """The candidate a Sources paragraph is, or None when it declares no tests."""
    testsuite = words(field(fields, "Testsuite"))
    if not testsuite:
        return None
    build_depends = relation_names(", ".join(
        v for v in (field(fields, "Build-Depends"), field(fields, "Build-Depends-Indep"),
                    field(fields, "Build-Depends-Arch")) if v))
    team = team_of(testsuite)
    section = field(fields, "Section")
    language = TEAM_LANGUAGES.get(team, team) if team != "autopkgtest" else guess_language(
        build_depends, section, field(fields, "Architecture"))
    base = index.repo_uri.rstrip("/") + "/" + field(fields, "Directory").strip("/") + "/"
    sha = {name: digest for digest, _, name in file_lines(field(fields, "Checksums-Sha256"))}
    files = [ArchiveFile(name=name, size=size, sha256=sha.get(name, ""), url=base + name)
             for _, size, name in file_lines(field(fields, "Files"))]
    return Candidate(source=field(fields, "Package"), version=field(fields, "Version"), team=team,
                     language=language, testsuite=testsuite, binaries=words(field(fields, "Binary")),
                     build_depends=build_depends, section=section, suite=index.codename, files=files)


def read_candidates(indexes: Iterable[SourceIndex]) -> list[Candidate]:
    """Every source package with tests in the indexes, its newest version once, by name."""
    newest: dict[str, Candidate] = {}
    for index in indexes:
        with open_index(index.path) as handle:
            for fields in paragraphs(handle):
                found = candidate(fields, index)
                if found is None:
                    continue
                known = newest.get(found.source)
                if known is None or compare_versions(found.version, known.version) > 0:
                    newest[found.source] = found
    return [newest[name] for name in sorted(newest)]


def select(candidates: Iterable[Candidate], *, teams: Iterable[str] = (),
           languages: Iterable[str] = ()) -> list[Candidate]:
    """The candidates of any of ``teams`` and any of ``languages`` (empty: all)."""
    teams, languages = set(teams), set(languages)
    return [c for c in candidates
            if (not teams or c.team in teams) and (not languages or c.language in languages)]


def counts(candidates: Iterable[Candidate]) -> dict[str, Counter[str]]:
    """How many candidates each team and each language has."""
    listed = list(candidates)
    return {"team": Counter(c.team for c in listed), "language": Counter(c.language for c in listed)}


# -- is every file served? ------------------------------------------------------------------

class _Transient(Exception):
    """A network failure worth another try (not an answer such as 404)."""


@retry(retry=retry_if_exception_type(_Transient), stop=stop_after_attempt(3),
       wait=wait_exponential(multiplier=0.5, max=4), reraise=True)
def _ask(url: str, method: str, timeout: float) -> int:
    headers = {"Range": "bytes=0-0"} if method == "GET" else {}
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the host's sources)
            return int(response.status)
    except urllib.error.HTTPError as exc:
        if exc.code >= 500 or exc.code == 429:
            raise _Transient(f"{exc.code} {exc.reason}") from exc
        return int(exc.code)
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
        raise _Transient(str(getattr(exc, "reason", exc))) from exc


def served(url: str, timeout: float = 10.0) -> tuple[bool | None, str]:
    """Does the archive serve ``url``? (True/False, the reason) from a HEAD request (a
    ranged GET where HEAD is refused); None when the network gave no answer. A ``file:``
    URI is looked up on disk."""
    if url.startswith("file:"):
        return Path(url.removeprefix("file:").removeprefix("//")).is_file(), "file"
    if not url.startswith(("http://", "https://")):
        return None, "not an http(s) URI"
    try:
        code = _ask(url, "HEAD", timeout)
        if code in (403, 405, 501):
            code = _ask(url, "GET", timeout)
    except _Transient as exc:
        return None, str(exc)
    return 200 <= code < 300, str(code)


def check_downloads(candidates: list[Candidate], *, workers: int = 4, timeout: float = 10.0,
                    on_done: Callable[[Candidate], None] | None = None) -> Iterator[Candidate]:
    """Each candidate with ``downloadable`` and ``missing`` filled in (in order, as they
    are checked): True when every file is served, False when one is not, None when the
    network gave no answer for one and none was refused."""
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:  # a consumer that stops early (enough found) leaves the rest unasked
        answers = [[pool.submit(served, f.url, timeout) for f in c.files] for c in candidates]
        for entry, futures in zip(candidates, answers, strict=True):
            results = [f.result() for f in futures]
            missing = [f"{file.name} ({why})" for file, (ok, why) in zip(entry.files, results, strict=True)
                       if ok is not True]
            refused = any(ok is False for ok, _ in results)
            unknown = any(ok is None for ok, _ in results)
            checked = entry.model_copy(update={
                "downloadable": False if refused else None if unknown or not entry.files else True,
                "missing": missing})
            if on_done:
                on_done(checked)
            yield checked
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
