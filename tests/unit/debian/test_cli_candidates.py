"""``debian candidates`` with the archive replaced by a small list: filters, --limit,
--json, and one clear line with exit 2 on bad input."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from cligym.cli.debian import debian_app
from cligym.debian import archive, candidates
from cligym.errors import BadInput
from cligym.models.debian import ArchiveFile, Candidate


def made(source: str, team: str, language: str) -> Candidate:
    return Candidate(source=source, version="1-1", team=team, language=language, testsuite=[team],
                     files=[ArchiveFile(name=f"{source}_1-1.dsc", size=1000, url=f"http://mirror.example/{source}")])


LISTED = [made("libfoo-perl", "perl", "perl"), made("node-bar", "nodejs", "nodejs"),
          made("libbaz-perl", "perl", "perl"), made("json-c", "autopkgtest", "c")]


@pytest.fixture
def app(monkeypatch) -> typer.Typer:
    monkeypatch.setattr(archive.AptState, "ensure_updated", lambda self: [])
    monkeypatch.setattr(candidates, "read_candidates", lambda indexes: list(LISTED))
    root = typer.Typer()
    root.add_typer(debian_app, name="debian")
    return root


def test_json_lists_the_selected_candidates(app) -> None:
    result = CliRunner().invoke(app, ["debian", "candidates", "--team", "perl", "--limit", "1", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["source"] for c in data["candidates"]] == ["libfoo-perl"]
    assert data["summary"] == {"with_tests": 4, "selected": 2, "checked": 0, "served": 0, "read": 0,
                               "superficial_dropped": 0, "listed": 1}


def test_check_downloads_keeps_what_is_served_until_the_limit(app, monkeypatch) -> None:
    def fake(entries, **_):
        for entry in entries:
            yield entry.model_copy(update={"downloadable": entry.source != "node-bar"})

    monkeypatch.setattr(candidates, "check_downloads", fake)
    result = CliRunner().invoke(app, ["debian", "candidates", "--check-downloads", "--limit", "2", "--json"])
    data = json.loads(result.stdout)
    assert [c["source"] for c in data["candidates"]] == ["libfoo-perl", "libbaz-perl"]
    assert data["summary"]["checked"] == 3 and data["summary"]["served"] == 2


def test_superficial_only_packages_are_dropped_and_the_limit_counts_the_kept(app, monkeypatch) -> None:
    from cligym.debian import superficial

    def fake(entry, timeout=30.0):
        return entry.model_copy(update={"superficial": entry.source == "libfoo-perl", "tests": ["t"]})

    monkeypatch.setattr(superficial, "check_superficial", fake)
    result = CliRunner().invoke(app, ["debian", "candidates", "--check-superficial", "2", "--limit", "2", "--json"])
    data = json.loads(result.stdout)
    assert [c["source"] for c in data["candidates"]] == ["node-bar", "libbaz-perl"]
    assert [c["superficial"] for c in data["candidates"]] == [False, None]  # only two read
    assert data["summary"]["superficial_dropped"] == 1
    assert data["summary"]["read"] == 2 and data["summary"]["checked"] == 3


def test_the_table_and_its_summary_line(app) -> None:
    result = CliRunner().invoke(app, ["debian", "candidates", "--language", "c", "-q"])
    assert result.exit_code == 0 and "json-c" in result.stdout
    assert "4 source packages declare tests, 1 selected, 1 listed" in result.stderr


def test_an_unknown_team_is_one_line_and_exit_2(app) -> None:
    result = CliRunner().invoke(app, ["debian", "candidates", "--team", "cobol"])
    assert isinstance(result.exception, BadInput) and result.exception.exit_code == 2
    assert str(result.exception).startswith("unknown team 'cobol': choose from ")
    assert CliRunner().invoke(app, ["debian", "candidates", "--limit", "0"]).exit_code == 2
