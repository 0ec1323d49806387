"""The Python sweeper runs the bundled pip unpacked, and a sweep is given gold's copy of it,
compiled, on a real gold image: the copy is made in a gold container, a sweep given it runs
it (its last line says so) and leaves the venv as without it, a copy of another wheel is not
used, and no copy stays in the container the tests then run in."""

from __future__ import annotations

import io
import tarfile

from cligym.harness.bundle import script
from cligym.harness.images import run_script
from cligym.verify import difficulty
from cligym.verify.difficulty import PIP_FROM_COPY, SWEEPER_PIP, _PipCopy

PROJECT = "markupsafe==3.0.2"


def _sweep(runtime, gold, copy: bytes | None, tamper: bool = False) -> tuple[str, str]:
    """A sweep of a gold container given ``copy`` as the difficulty measure gives it: its
    output's last line, and the venv's pip's answer after it."""
    with runtime.session(gold.image) as session:
        if copy is not None:
            session.put_archive(copy, "/tmp")
        if tamper:  # a copy unpacked from another wheel
            assert session.exec(["sh", "-c", f"echo {'0' * 64} > {SWEEPER_PIP}/wheel.sha256"]).ok
        swept = run_script(session, script("sweeper.sh"))
        pip = session.exec([gold.python, "-m", "pip", "--version"])
        works = session.exec([gold.python, "-c", "import markupsafe"])
    assert works.ok and pip.ok, (works.output, pip.output)
    return swept.output.strip().splitlines()[-1], pip.output.split(" from ")[0]


def test_a_sweep_runs_golds_compiled_pip_and_only_a_copy_of_the_same_wheel(runtime, gold_envs):
    gold = gold_envs(PROJECT)
    copy = _PipCopy().of(runtime, gold)
    assert copy is not None
    with tarfile.open(fileobj=io.BytesIO(copy)) as archive:
        names = archive.getnames()
    assert any(n.endswith(".pyc") and "/pip/_internal/" in n for n in names) and any(
        n.endswith("wheel.sha256") for n in names)
    last, pip = _sweep(runtime, gold, copy)
    assert last == PIP_FROM_COPY and pip.startswith("pip ")
    last, pip_unpacked = _sweep(runtime, gold, copy, tamper=True)
    assert last == "sweeper: pip from unpacked" and pip_unpacked == pip  # the same pip installed


def test_the_sweepers_verdict_makes_golds_copy_once_and_leaves_none_behind(runtime, gold_envs, monkeypatch):
    gold = gold_envs(PROJECT)
    copies = _PipCopy()
    monkeypatch.setattr(difficulty, "_PIP_COPY", copies)
    sessions: list[str] = []
    real = runtime.session
    monkeypatch.setattr(runtime, "session", lambda image, *a, **k: sessions.append(image) or real(image, *a, **k))
    left: list[bool] = []
    real_tests = difficulty.run_tests_in_session

    def tests_after(session, *args, **kwargs):
        left.append(session.exec(["test", "-e", SWEEPER_PIP]).exit_code == 0)
        return real_tests(session, *args, **kwargs)

    monkeypatch.setattr(difficulty, "run_tests_in_session", tests_after)
    tests = gold.tests[:5]
    assert difficulty.sweeper_solves(runtime, gold, gold.image, tests)
    assert difficulty.sweeper_solves(runtime, gold, gold.image, tests)
    assert copies.image == gold.image and copies.tar is not None
    assert left == [False, False]
    assert len(sessions) <= 4  # the copy's container once, then a container a sweep (pip's reading cached)
