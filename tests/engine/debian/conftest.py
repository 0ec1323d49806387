"""Fixtures of the Debian engine tests: real source packages found by asking the archive
(the smallest ones of a team that it serves in full), never named, and their gold
environments, built once per test session and shared by the test files that read them."""

from __future__ import annotations

from pathlib import Path

import pytest

from cligym.debian.archive import AptState
from cligym.debian.candidates import check_downloads, read_candidates, select
from cligym.errors import CligymError
from cligym.gold import make_gold
from cligym.layout import GoldDir
from cligym.models.debian import Candidate
from cligym.models.gold import GoldEnv
from cligym.models.io import load
from tests.engine.shared import once


def served_smallest(state: AptState, team: str, how_many: int, batch: int = 200) -> list[Candidate]:
    """The ``how_many`` smallest source packages of ``team`` whose files the archive serves,
    asked in batches of ``batch`` until enough are found (few of some teams' are), in order:
    a batch is left as soon as they are."""
    listed = sorted(select(read_candidates(state.ensure_updated()), teams=[team]), key=lambda c: c.size)
    found: list[Candidate] = []
    for start in range(0, len(listed), batch):
        for checked in check_downloads(listed[start:start + batch], workers=8, timeout=10):
            if checked.downloadable:
                found.append(checked)
                if len(found) == how_many:
                    return found  # (the batch's other questions are cancelled)
    pytest.fail(f"only {len(found)} of the {len(listed)} {team} packages are served in full here")


def first_gold_dir(state: AptState, team: str, runtime, base_image, out: Path) -> Path:
    """The gold folder (``cligym gold``'s output) of the first of the three smallest served
    packages of ``team`` whose gold succeeds (a package's own tests may need what no testbed
    here has: each failure is kept in the message)."""
    failures = []
    for entry in served_smallest(state, team, 3):
        try:
            make_gold(f"deb:{entry.source}={entry.version}", out / entry.source, runs=2, base_image=base_image,
                      runtime=runtime)
            return out / entry.source
        except CligymError as exc:
            failures.append(f"{entry.source}: {exc}")
    pytest.fail("no gold among the smallest served packages:\n" + "\n".join(failures))


def first_gold(state: AptState, team: str, runtime, base_image, out: Path) -> GoldEnv:
    """The gold environment of ``first_gold_dir``."""
    return load(GoldEnv, GoldDir(first_gold_dir(state, team, runtime, base_image, out)).gold)


@pytest.fixture(scope="session")
def state(tmp_path_factory) -> AptState:
    return AptState(tmp_path_factory.mktemp("debian-apt") / "apt")


@pytest.fixture(scope="session")
def perl_gold_dir(state, runtime, base_image, tmp_path_factory) -> Path:
    """The gold folder of a small perl-team package (gold.json, probe-debian.json), made once
    per test run however many workers ask (read only)."""
    made = once(tmp_path_factory, "debian-perl-gold",
                lambda folder: (folder / "dir").write_text(str(first_gold_dir(state, "perl", runtime, base_image,
                                                                                folder))))
    return Path((made / "dir").read_text())


@pytest.fixture(scope="session")
def perl_gold(perl_gold_dir: Path) -> GoldEnv:
    return load(GoldEnv, GoldDir(perl_gold_dir).gold)
