"""The Python sweeper is given what gold prepares (sweeper.sh --prepare), on a real gold
image: the bundled pip, compiled, which a sweep runs (its last line says so) leaving the venv
as without it, a copy of another wheel not used, and no copy left in the container the tests
then run in; and the state a certificate refresh leaves, which lets a sweep skip a refresh
that would write the same bytes, and only then."""

from __future__ import annotations

import io
import tarfile
import zipfile

from cligym.harness.bundle import script
from cligym.harness.images import run_script
from cligym.verify import difficulty
from cligym.verify.difficulty import CERTS_KEPT, PIP_FROM_COPY, SWEEPER_PIP, _Preparation

PROJECT = "markupsafe==3.0.2"


def _swept(runtime, gold, prepared: bytes | None, *reads: list[str], before: str = "", tamper: str = ""):
    """A sweep of a gold container given ``prepared`` as the difficulty measure gives it:
    the shell command ``before`` runs first, ``tamper`` once the preparation is in place;
    the sweep's result, and each of ``reads`` run after it."""
    with runtime.session(gold.image) as session:
        if before:
            assert session.exec(["sh", "-c", before]).ok
        if prepared is not None:
            session.put_archive(prepared, "/tmp")
        if tamper:
            assert session.exec(["sh", "-c", tamper]).ok
        swept = run_script(session, script("sweeper.sh"))
        return swept, [session.exec(command) for command in reads]


def _sweep(runtime, gold, copy: bytes | None, tamper: bool = False) -> tuple[str, str]:
    """A sweep given ``copy`` (with ``tamper``, a copy unpacked from another wheel): its
    output's last line, and the venv's pip's answer after it."""
    swept, (pip, works) = _swept(runtime, gold, copy, [gold.python, "-m", "pip", "--version"],
                                 [gold.python, "-c", "import markupsafe"],
                                 tamper=f"echo {'0' * 64} > {SWEEPER_PIP}/wheel.sha256" if tamper else "")
    assert works.ok and pip.ok, (works.output, pip.output)
    return swept.output.strip().splitlines()[-1], pip.output.split(" from ")[0]


def test_a_sweep_runs_golds_compiled_pip_and_only_a_copy_of_the_same_wheel(runtime, gold_envs):
    gold = gold_envs(PROJECT)
    copy = _Preparation().of(runtime, gold)
    assert copy is not None
    with tarfile.open(fileobj=io.BytesIO(copy)) as archive:
        names = archive.getnames()
        zipped = archive.extractfile(next(n for n in names if n.endswith("/pip.zip")))
        assert zipped is not None
        with zipfile.ZipFile(io.BytesIO(zipped.read())) as pip_zip:
            inside = set(pip_zip.namelist())
    assert any(n.endswith("wheel.sha256") for n in names) and not any(".py" in n for n in names)  # one file
    compiled = [n for n in inside if n.startswith("pip/_internal/") and n.endswith(".py") and f"{n}c" in inside]
    assert len(compiled) > 100  # each module's bytecode beside its source, where zipimport reads it
    last, pip = _sweep(runtime, gold, copy)
    assert last == PIP_FROM_COPY and pip.startswith("pip ")
    last, pip_unpacked = _sweep(runtime, gold, copy, tamper=True)
    assert last == "sweeper: pip from unpacked" and pip_unpacked == pip  # the same pip installed


def test_the_sweepers_verdict_makes_golds_copy_once_and_leaves_none_behind(runtime, gold_envs, monkeypatch):
    gold = gold_envs(PROJECT)
    copies = _Preparation()
    monkeypatch.setattr(difficulty, "_PREPARATION", copies)
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


#: The certificates' state as the test reads it: every entry below /etc/ssl, with each file's bytes.
CERTS = "find /etc/ssl /usr/share/ca-certificates -printf '%y %m %p -> %l\\n' | sort; " \
        "find /etc/ssl /usr/share/ca-certificates -type f -exec sha256sum {} + | sort"


def _certs_sweep(runtime, gold, prepared: bytes | None, before: str = "") -> tuple[str, str]:
    """A sweep of a gold container after the shell command ``before``: its output, and the
    certificates' state after it."""
    swept, (state,) = _swept(runtime, gold, prepared, ["sh", "-c", CERTS], before=before)
    assert swept.ok and state.ok, (swept.output, state.output)
    return swept.output, state.output


def test_a_sweep_skips_the_certificate_refresh_only_where_it_would_write_the_same_bytes(runtime, gold_envs):
    gold = gold_envs(PROJECT)
    prepared = _Preparation().of(runtime, gold)
    assert prepared is not None
    with tarfile.open(fileobj=io.BytesIO(prepared)) as archive:
        assert any(n.endswith("/certs.sha256") for n in archive.getnames())
    refreshed_out, refreshed = _certs_sweep(runtime, gold, None)  # no preparation: refreshed as always
    assert CERTS_KEPT not in refreshed_out
    kept_out, kept = _certs_sweep(runtime, gold, prepared)
    assert CERTS_KEPT in kept_out and kept == refreshed  # skipped, and the state the refresh leaves
    # a bundle cut short: refreshed, back to the same state
    garbled = "echo '-----BEGIN CERTIFICATE-----' >> /etc/ssl/certs/ca-certificates.crt"
    out, state = _certs_sweep(runtime, gold, prepared, garbled)
    assert CERTS_KEPT not in out and state == refreshed
    # a certificate's link removed: refreshed, the link made again
    unlinked = "rm \"$(find /etc/ssl/certs -type l -name '*.pem' | head -n 1)\""
    out, state = _certs_sweep(runtime, gold, prepared, unlinked)
    assert CERTS_KEPT not in out and state == refreshed
    # a machine whose refresh runs a hook: never skipped (a hook may write beyond what the
    # state covers), even when prepared on the same machine
    hook = "mkdir -p /etc/ca-certificates/update.d && printf '#!/bin/sh\\n' > /etc/ca-certificates/update.d/x " \
           "&& chmod +x /etc/ca-certificates/update.d/x"
    with runtime.session(gold.image) as session:
        assert session.exec(["sh", "-c", hook]).ok
        session.put_files({"/tmp/sweeper.sh": script("sweeper.sh")})
        assert session.exec(["sh", "/tmp/sweeper.sh", "--prepare"]).ok
        hooked = session.get_archive(SWEEPER_PIP)
    out, _ = _certs_sweep(runtime, gold, hooked, hook)
    assert CERTS_KEPT not in out
