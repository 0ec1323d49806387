"""``cligym gold deb:SOURCE`` on real Debian source packages, on a real engine: packages
are found by asking the archive (the smallest ones of a team that it serves in full), never
named. The gold image is FROM the shared base, its tests are the package's autopkgtests run
by debtest.sh with per-test ids from the inner runner, and its own apt repository
reinstalls a package with no network."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cligym.debian.archive import AptState
from cligym.debian.candidates import check_downloads, read_candidates, select
from cligym.errors import CligymError
from cligym.gold import make_gold
from cligym.models.debian import Candidate
from cligym.models.gold import GoldEnv


def served_smallest(state: AptState, team: str, how_many: int) -> list[Candidate]:
    """The ``how_many`` smallest source packages of ``team`` whose files the archive serves."""
    listed = sorted(select(read_candidates(state.ensure_updated()), teams=[team]), key=lambda c: c.size)
    found = [c for c in check_downloads(listed[:200], workers=8, timeout=10) if c.downloadable]
    if len(found) < how_many:
        pytest.fail(f"only {len(found)} of the 200 smallest {team} packages are served in full here")
    return found[:how_many]


def first_gold(state: AptState, team: str, runtime, base_image, out: Path) -> GoldEnv:
    """The gold environment of the first of the three smallest served packages of ``team``
    whose gold succeeds (a package's own tests may need what no testbed here has: each
    failure is kept in the message)."""
    failures = []
    for entry in served_smallest(state, team, 3):
        try:
            return make_gold(f"deb:{entry.source}={entry.version}", out / entry.source, runs=2,
                             base_image=base_image, runtime=runtime)
        except CligymError as exc:
            failures.append(f"{entry.source}: {exc}")
    pytest.fail("no gold among the smallest served packages:\n" + "\n".join(failures))


@pytest.fixture(scope="module")
def state(tmp_path_factory) -> AptState:
    return AptState(tmp_path_factory.mktemp("debian-apt") / "apt")


@pytest.fixture(scope="module")
def perl_gold(state, runtime, base_image, tmp_path_factory) -> GoldEnv:
    return first_gold(state, "perl", runtime, base_image, tmp_path_factory.mktemp("debian-gold"))


def test_a_perl_package_gold_has_per_test_ids_and_is_stable(perl_gold: GoldEnv, runtime) -> None:
    gold = perl_gold
    assert gold.source.kind == "debian" and gold.test_command.endswith("debtest.sh")
    assert gold.tests and gold.runs == 2
    # prove's TAP gives one id per assertion: <autopkgtest test>::<file>::<n> - <description>
    assert any(t.count("::") >= 1 for t in gold.tests), gold.tests[:5]
    config = runtime.image_config(gold.image)
    assert config.get("WorkingDir") == gold.workdir


def test_the_gold_image_reinstalls_its_packages_offline(perl_gold: GoldEnv, runtime) -> None:
    package = next(r for r in perl_gold.requirements if not r.startswith("dpkg-dev"))
    result = runtime.run(perl_gold.image, ["sh", "-c", f"apt-get install --reinstall -y -q {package} && "
                                                       "apt-cache policy | grep -c http || true"], timeout=300)
    assert result.ok, result.output[-800:]
    assert result.output.strip().splitlines()[-1] == "0"  # its apt knows no remote source


@pytest.mark.slow
@pytest.mark.parametrize("team", ["nodejs", "go", "ruby", "autopkgtest"])
def test_gold_of_other_teams(team: str, state, runtime, base_image, tmp_path: Path) -> None:
    gold = first_gold(state, team, runtime, base_image, tmp_path)
    assert gold.tests and not set(gold.tests) & set(gold.failing)


def test_cli_gold_of_a_bad_debian_spec_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "cligym", "gold", "deb:Not A Source", "-o", str(tmp_path / "g")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "deb:SOURCE" in proc.stderr
    assert not (tmp_path / "g" / "gold.json").exists()
