"""``cligym debian candidates``: the source packages of the archive (as the host's apt
sources name it) that declare tests, by team and language; optionally only those whose
files all download here and whose tests are not all superficial."""

from __future__ import annotations

import random
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


def _pipeline(chosen, *, limit, downloads, superficial, workers, timeout, reporter):
    """The chosen candidates, in order, that pass the asked checks, up to ``limit``: every
    file served (``downloads``), then for the first ``superficial`` of those, tests read
    and the superficial-only ones dropped. Returns them and the counts."""
    from cligym.debian.candidates import check_downloads
    from cligym.debian.superficial import check_superficial

    kept, tally = [], {"checked": 0, "served": 0, "read": 0, "superficial_dropped": 0}
    stream = check_downloads(chosen, workers=workers, timeout=timeout) if downloads else iter(chosen)
    with reporter.task("checking candidates" if downloads or superficial else "listing",
                       total=None if limit else len(chosen)):
        for entry in stream:
            tally["checked"] += 1
            reporter.advance()
            if downloads and not entry.downloadable:
                continue
            tally["served"] += 1
            if tally["read"] < superficial:
                entry = check_superficial(entry, timeout=max(timeout, 30.0))
                tally["read"] += 1
                if entry.superficial:
                    tally["superficial_dropped"] += 1
                    continue
            kept.append(entry)
            reporter.log(f"{len(kept)} kept of {tally['checked']}: {entry.source}")
            if limit and len(kept) >= limit:
                break
    return kept, tally


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
        help="Read debian/tests/control of the first N packages (that passed --check-downloads) and drop "
             "those whose tests are all superficial; --limit counts the packages kept.")] = 0,
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
        if check_downloads or check_superficial:
            kept, tally = _pipeline(chosen, limit=limit, downloads=check_downloads, superficial=check_superficial,
                                    workers=workers, timeout=timeout, reporter=reporter)
        else:
            kept, tally = (chosen[:limit] if limit else chosen), {"checked": 0, "served": 0, "read": 0,
                                                                  "superficial_dropped": 0}
    summary = {"with_tests": len(listed), "selected": len(chosen), **tally, "listed": len(kept)}
    if as_json:
        print_json({"summary": summary, "counts": {k: dict(v) for k, v in found.counts(kept).items()},
                    "candidates": [c.model_dump(mode="json") for c in kept]})
        return
    _table(kept)
    said = f"; {tally['served']} of {tally['checked']} checked are served in full" if check_downloads else ""
    if check_superficial:
        said += f"; tests read for {tally['read']}, {tally['superficial_dropped']} superficial only (dropped)"
    err.print(f"{len(listed)} source packages declare tests, {len(chosen)} selected, {len(kept)} listed{said}",
              markup=False, highlight=False)


def _mark(value: bool | None) -> str:
    return "?" if value is None else "yes" if value else "no"


def _table(kept) -> None:
    rows = [(c.source, c.version, c.team, c.language, len(c.files), f"{c.size / 1e6:.1f}", _mark(c.downloadable),
             _mark(None if c.superficial is None else not c.superficial), " ".join(c.tests) or "")
            for c in kept]
    print_table("Debian source packages with tests", ("source", "version", "team", "language", "files", "MB",
                                                      "served", "real tests", "tests"), rows)
