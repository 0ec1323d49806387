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

from cligym.models.gold import GoldEnv
from tests.engine.debian.conftest import first_gold  # the fixtures (state, perl_gold) are there too


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
