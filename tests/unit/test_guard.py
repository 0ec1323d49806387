"""The verifier's guard as files (no engine): the sums phase.sh compares an upload with are
what busybox prints for the folder they were made from, a changed upload differs from them,
the compose file mounts the guard read-only with its launcher first on PATH, and the PATH
follows ΔD's own ``ENV PATH`` lines where it can."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from cligym.harness import guard
from cligym.layout import TaskDir
from cligym.harness.bundle import host_busybox

BUSYBOX = str(host_busybox())  # the one every task ships


def busybox_sums(folder: Path) -> dict[str, str]:
    """The three listings phase.sh makes of an upload, made by busybox here."""
    def run(command: str) -> str:
        return subprocess.run([BUSYBOX, "sh", "-c", command], cwd=folder, capture_output=True, text=True,
                              check=True, env={"LC_ALL": "C"}).stdout
    return {"tests.dirs": run("find . -type d | LC_ALL=C sort"),
            "tests.files": run("find . -type f | LC_ALL=C sort")}


def upload(tmp_path: Path) -> Path:
    tests = tmp_path / "tests"
    (tests / "reference" / "Sub.dir").mkdir(parents=True)
    (tests / "bin").mkdir()
    (tests / "test.sh").write_text("#!/tests/bin/busybox sh\n")
    (tests / "bin" / "busybox").write_bytes(b"\x7fELF...")
    (tests / "reference" / "B.txt").write_text("b\n")
    (tests / "reference" / "a.txt").write_text("a\n")
    (tests / "reference" / "Sub.dir" / "_x-1.tsv").write_text("x\n")
    return tests


def check(folder: Path, sums: dict[str, str], tmp_path: Path) -> bool:
    """phase.sh's comparison, with busybox, of ``folder`` against ``sums``."""
    for name, text in sums.items():
        (tmp_path / name).write_text(text)
    listed = busybox_sums(folder)
    same = all(listed[n] == sums[n] for n in listed)
    ok = subprocess.run([BUSYBOX, "sha256sum", "-c", "-s", str(tmp_path / "tests.sha256")], cwd=folder)
    return same and ok.returncode == 0


@pytest.mark.skipif(not Path(BUSYBOX).is_file(), reason="no busybox on this host")
def test_the_sums_are_what_busybox_lists_and_a_changed_upload_is_not(tmp_path):
    tests = upload(tmp_path)
    sums = guard._sums(tests)
    listed = busybox_sums(tests)
    assert sums["tests.dirs"] == listed["tests.dirs"] and sums["tests.files"] == listed["tests.files"]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    assert check(tests, sums, scratch)
    (tests / "reference" / "a.txt").write_text("forged\n")
    assert not check(tests, sums, scratch)
    (tests / "reference" / "a.txt").write_text("a\n")
    (tests / "reference" / "extra.txt").write_text("")
    assert not check(tests, sums, scratch)


def test_the_compose_file_mounts_the_guard_read_only_with_its_launcher_first(tmp_path):
    task = TaskDir(tmp_path / "task")
    main = yaml.safe_load(guard.compose_yaml(task, "/cligym/bin:/usr/bin:/bin"))["services"]["main"]
    assert main["volumes"] == [f"./guard:{guard.GUARD_MOUNT}:ro"]
    assert (task.environment / "guard") == task.guard
    assert main["environment"]["PATH"].split(":")[0] == guard.GUARD_BIN


@pytest.mark.parametrize("lines, expected", [
    ([], "/cligym/bin:/venv/bin:/usr/bin"),
    (["RUN true", "ENV LD_LIBRARY_PATH=/x"], "/cligym/bin:/venv/bin:/usr/bin"),
    (["ENV PATH=/opt/shim:$PATH"], "/cligym/bin:/opt/shim:/venv/bin:/usr/bin"),
    (["ENV PATH=/a:${PATH}", "ENV PATH /b:$PATH"], "/cligym/bin:/b:/a:/venv/bin:/usr/bin"),
    (['ENV PATH="/usr/bin:/bin"'], "/cligym/bin:/usr/bin:/bin"),
    (["ENV PATH=$HOME/bin:$PATH"], None),
])
def test_the_path_follows_the_deltas_own_path(lines, expected):
    assert guard.guarded_path("/venv/bin:/usr/bin", lines) == expected


def test_the_launcher_is_built_static_and_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("CLIGYM_HOME", str(tmp_path))
    guard.launcher_bytes.cache_clear()
    try:
        data = guard.launcher_bytes()
    finally:
        guard.launcher_bytes.cache_clear()
    assert data.startswith(b"\x7fELF") and b"ld-linux" not in data[:8192]
    (kept,) = tmp_path.glob("guard-launcher-*")
    assert kept.read_bytes() == data
