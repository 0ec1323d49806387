"""The Debian probe on a real package, on a real engine: ``cligym gold deb:SOURCE`` writes
probe-debian.json beside gold.json, naming for each autopkgtest test the programs it ran and
files owned by the package's own binaries; strace, installed for the probe only, is not in
the gold image afterwards. (No container is left: the tier's autouse fixture checks it.)"""

from __future__ import annotations

from pathlib import Path

from cligym.layout import GoldDir
from cligym.models.debian_probe import DebianProbe
from cligym.models.gold import GoldEnv
from cligym.models.io import load


def test_the_probe_names_what_each_test_touches(perl_gold_dir: Path, perl_gold: GoldEnv) -> None:
    path = GoldDir(perl_gold_dir).probe_debian
    assert path.is_file(), f"no probe beside {perl_gold.source.spec}'s gold record"
    probe = load(DebianProbe, path)
    assert probe.gold_image_id == perl_gold.image_id and probe.workdir == perl_gold.workdir
    assert set(probe.tests) == {t.split("::", 1)[0] for t in perl_gold.tests}
    for name, touch in probe.tests.items():
        assert touch.programs and touch.processes >= 1, f"{name}: no program executed"
        assert all(p.path.startswith("/") and p.real.startswith("/") for p in touch.programs)
        assert not any(f.startswith(("/proc/", "/dev/", "/opt/cligym/", "/tmp/cligym-probe")) for f in touch.files)
    assert probe.of_source, f"no touched file is owned by a binary package of {perl_gold.source.name}"
    own = {p for package in probe.of_source for p in probe.owned_by(package)}
    assert any(probe.touching(p) for p in own)
    assert set(probe.paths()) <= set(probe.owners)
    assert probe.alternatives and probe.env.get("AUTOPKGTEST_TMP")
    assert "strace" in probe.tracer


def test_the_tracer_stays_out_of_the_gold_image(perl_gold: GoldEnv, runtime) -> None:
    result = runtime.run(perl_gold.image, ["sh", "-c", "command -v strace || echo none"], timeout=120)
    assert result.ok and result.output.strip().splitlines()[-1] == "none"
