"""``cligym debian candidates``: the source packages of the archive (as the host's apt
sources name it) that declare tests, by team and language; optionally only those whose
files all download here and whose tests are not all superficial."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Optional

import typer

from cligym.cli.app import JsonReport, Quiet, err, print_json, print_table
from cligym.errors import BadInput

debian_app = typer.Typer(help="Debian source packages as gold environments: list the candidates the archive "
                              "offers (docs/debian.md).", no_args_is_help=True)


def _known(values: list[str], allowed: list[str], what: str) -> list[str]:
    bad = [v for v in values if v not in allowed]
    if bad:
        raise BadInput(f"unknown {what} {bad[0]!r}: choose from {', '.join(allowed)}")
    return values


def _downloadable(chosen, limit, workers, timeout, reporter):
    """The chosen candidates the archive serves every file of, up to ``limit``; and how
    many were checked."""
    from cligym.debian.candidates import check_downloads

    kept, checked = [], 0
    with reporter.task("asking the archive for every file", total=None if limit else len(chosen)):
        for entry in check_downloads(chosen, workers=workers, timeout=timeout):
            checked += 1
            reporter.advance()
            if entry.downloadable:
                kept.append(entry)
                reporter.log(f"{len(kept)} served of {checked}: {entry.source}")
                if limit and len(kept) >= limit:
                    break
    return kept, checked


def _superficial(kept, count, workers, reporter):
    """The first ``count`` candidates with their tests read, the superficial-only ones
    dropped; the rest unchanged."""
    from cligym.debian.superficial import check_superficial

    head, tail = kept[:count], kept[count:]
    with reporter.task("reading debian/tests/control", total=len(head)), \
            ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        read = []
        for entry in pool.map(check_superficial, head):
            reporter.advance()
            read.append(entry)
    return [e for e in read if e.superficial is not True] + tail, sum(e.superficial is True for e in read)


@debian_app.command("candidates")
def candidates(
    team: Annotated[Optional[list[str]], typer.Option(
        "--team", help="Only this team's packages (autopkgtest-pkg-<team>; 'autopkgtest' for packages with "
                       "their own debian/tests/control); repeatable.")] = None,
    language: Annotated[Optional[list[str]], typer.Option(
        "--language", help="Only this language (perl, go, nodejs, ruby, r, rust, python, c, ...); repeatable.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="List at most this many.")] = None,
    check_downloads: Annotated[bool, typer.Option(
        "--check-downloads", help="Ask the archive for every file of each package; list only those it serves "
                                  "in full (with --limit: until that many are found).")] = False,
    check_superficial: Annotated[int, typer.Option(
        "--check-superficial", metavar="N", min=0,
        help="Read debian/tests/control of the first N listed packages and drop those whose tests are all "
             "superficial.")] = 0,
    seed: Annotated[Optional[int], typer.Option(
        "--seed", help="Shuffle the packages with this seed before --limit (default: by name).")] = None,
    update: Annotated[bool, typer.Option("--update", help="Download the archive's indexes again first.")] = False,
    workers: Annotated[int, typer.Option("--workers", min=1, max=16, help="Concurrent requests.")] = 4,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per request.")] = 10.0,
    as_json: JsonReport = False,
    quiet: Quiet = False,
) -> None:
    """List source packages that declare autopkgtests, from a private apt state made from
    the host's apt sources (with deb-src added; the host's apt is never changed)."""
    from cligym.debian import candidates as found
    from cligym.debian.archive import AptState
    from cligym.ui import Reporter, RichReporter

    teams = _known(team or [], found.TEAMS, "team")
    languages = _known(language or [], found.LANGUAGES, "language")
    state = AptState()
    with (Reporter() if quiet or as_json else RichReporter(err)) as reporter:
        with reporter.task("the archive's indexes"):
            indexes = state.update() if update else state.ensure_updated()
        with reporter.task("reading the Sources indexes"):
            listed = found.read_candidates(indexes)
        chosen = found.select(listed, teams=teams, languages=languages)
        if seed is not None:
            random.Random(seed).shuffle(chosen)
        checked = dropped = 0
        if check_downloads:
            kept, checked = _downloadable(chosen, limit, workers, timeout, reporter)
            served = len(kept)
        else:
            kept = chosen[:limit] if limit else chosen
        if check_superficial:
            kept, dropped = _superficial(kept, check_superficial, workers, reporter)
    summary = {"with_tests": len(listed), "selected": len(chosen), "checked": checked,
               "served": served if check_downloads else None, "superficial_dropped": dropped, "listed": len(kept)}
    if as_json:
        print_json({"summary": summary, "counts": {k: dict(v) for k, v in found.counts(kept).items()},
                    "candidates": [c.model_dump(mode="json") for c in kept]})
        return
    _table(kept)
    said = f"; {served} of {checked} checked are served in full" if check_downloads else ""
    err.print(f"{len(listed)} source packages declare tests, {len(chosen)} selected, {len(kept)} listed{said}"
              + (f"; {dropped} with superficial tests only dropped" if check_superficial else ""),
              markup=False, highlight=False)


def _mark(value: bool | None) -> str:
    return "?" if value is None else "yes" if value else "no"


def _table(kept) -> None:
    rows = [(c.source, c.version, c.team, c.language, len(c.files), f"{c.size / 1e6:.1f}", _mark(c.downloadable),
             _mark(None if c.superficial is None else not c.superficial), " ".join(c.tests) or "")
            for c in kept]
    print_table("Debian source packages with tests", ("source", "version", "team", "language", "files", "MB",
                                                      "served", "real tests", "tests"), rows)
