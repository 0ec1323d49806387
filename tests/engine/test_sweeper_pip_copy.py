"""The Python sweeper runs the bundled pip unpacked, and a sweep reuses the copy (its
bytecode compiled) an earlier sweep left, on a real gold image: the first sweep unpacks
it and says so, the next one given its copy does not, a copy of another wheel is not
used, and no copy stays in the container the tests then run in."""

from __future__ import annotations

import io
import tarfile

from cligym.harness.bundle import script
from cligym.harness.images import run_script
from cligym.verify import difficulty
from cligym.verify.difficulty import PIP_UNPACKED, SWEEPER_PIP, _PipCopy

PROJECT = "markupsafe==3.0.2"


def _sweep(runtime, gold, copy: _PipCopy, tamper: bool = False) -> tuple[str, bool, str]:
    """A sweep of a gold container as the difficulty measure makes it: its output's last
    line, whether a copy is left after it, and the venv's pip's answer."""
    with runtime.session(gold.image) as session:
        copy.offer(session)
        if tamper:  # a copy unpacked from another wheel
            assert session.exec(["sh", "-c", f"echo {'0' * 64} > {SWEEPER_PIP}/wheel.sha256"]).ok
        swept = run_script(session, script("sweeper.sh"))
        copy.keep(session, swept.output)
        left = session.exec(["test", "-e", SWEEPER_PIP]).exit_code == 0
        pip = session.exec([gold.python, "-m", "pip", "--version"])
        works = session.exec([gold.python, "-c", "import markupsafe"])
    assert works.ok, works.output
    return swept.output.strip().splitlines()[-1], left, pip.output if pip.ok else ""


def test_a_sweep_reuses_the_pip_an_earlier_sweep_unpacked_and_only_from_the_same_wheel(runtime, gold_envs):
    gold = gold_envs(PROJECT)
    copy = _PipCopy()
    last, left, pip = _sweep(runtime, gold, copy)
    assert last == PIP_UNPACKED and not left and pip.startswith("pip ")
    assert copy.tar is not None
    with tarfile.open(fileobj=io.BytesIO(copy.tar)) as archive:
        names = archive.getnames()
    assert any(n.endswith(".pyc") and "/pip/_internal/" in n for n in names)  # the sweep's imports compiled it
    kept = copy.tar

    last, left, pip_again = _sweep(runtime, gold, copy)
    assert last != PIP_UNPACKED and not left and pip_again == pip  # the copy ran, and installed the same pip
    assert copy.tar is kept

    last, left, _ = _sweep(runtime, gold, copy, tamper=True)
    assert last == PIP_UNPACKED and not left


def test_the_sweepers_verdict_on_gold_is_the_same_with_the_copy(runtime, gold_envs, monkeypatch):
    gold = gold_envs(PROJECT)
    monkeypatch.setattr(difficulty, "_PIP_COPY", _PipCopy())
    tests = gold.tests[:5]
    assert difficulty.sweeper_solves(runtime, gold, gold.image, tests)
    assert difficulty._PIP_COPY.tar is not None
    assert difficulty.sweeper_solves(runtime, gold, gold.image, tests)
