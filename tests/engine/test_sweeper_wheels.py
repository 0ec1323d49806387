"""The sweeper's reinstall when its wheelhouses name one distribution twice, on a real gold
image: a house of pip's configuration and ``/opt/wheelhouse`` each hold a version of a
small distribution (the case of a project whose wheelhouse has a newer setuptools than the
system's bundled one). pip refuses two versions of one distribution in one install; the
sweeper installs the last found (gold's ``/etc/pip.conf`` names ``/opt/wheelhouse``, read
before ``/etc/xdg/pip/pip.conf``'s house) in the one install it makes of every wheel, and
leaves the venv as installing wheel by wheel would have; a wheel cut short is left out
first (wheel by wheel, it alone would fail)."""

from __future__ import annotations

import io
import zipfile

from cligym.harness.bundle import script

PROJECT = "markupsafe==3.0.2"
NAME = "cligym_sweep_probe"
HOUSE = "/opt/cligym-other-house"
LOG = "/tmp/cligym-sweeper.log"


def _wheel(version: str) -> bytes:
    """A pure-Python wheel of one module that says its version."""
    info = f"{NAME}-{version}.dist-info"
    files = {
        f"{NAME}.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {NAME.replace('_', '-')}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: cligym-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return buffer.getvalue()


def test_one_install_keeps_the_last_version_of_a_distribution_named_twice(runtime, gold_envs):
    gold = gold_envs(PROJECT)
    with runtime.session(gold.image) as session:
        assert session.exec(["mkdir", "-p", HOUSE, "/etc/xdg/pip"]).ok
        session.put_files({
            f"/opt/wheelhouse/{NAME}-1.0-py3-none-any.whl": _wheel("1.0"),
            # the same distribution, its name spelled another way (PEP 503 makes them one)
            f"{HOUSE}/Cligym.Sweep_Probe-2.0-py3-none-any.whl": _wheel("2.0"),
            # and a later one cut short (no central directory): pip could not open it
            f"{HOUSE}/cligym_sweep_probe-3.0-py3-none-any.whl": _wheel("3.0")[:200],
            "/etc/xdg/pip/pip.conf": f"[global]\nfind-links = {HOUSE}\n",
        })
        session.put_files({"/tmp/cligym-sweeper.sh": script("sweeper.sh")})
        assert session.exec(["sh", "-c", f"sh /tmp/cligym-sweeper.sh > {LOG} 2>&1"], timeout=600).ok
        log = session.exec(["cat", LOG]).output
        installs = session.exec(["grep", "-c", "^Successfully installed", LOG]).output.split()
        version = session.exec([gold.python, "-c", f"import {NAME}; print({NAME}.VERSION)"])
    assert "ResolutionImpossible" not in log, log[-2000:]
    assert installs == ["1"], log[-2000:]
    assert version.ok and version.output.strip() == "2.0", version.output
