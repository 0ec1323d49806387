"""The verifier's shell files (package data under cligym/harness/scripts) pass shellcheck
as POSIX sh, the dialect busybox's ash runs; and the listing functions compare what a path
opens, not how it gets there, run here under the same static busybox on a scratch tree."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cligym.harness.bundle import host_busybox

BUSYBOX = str(host_busybox())  # the one every task ships

SCRIPTS = Path(__file__).resolve().parents[2] / "src" / "cligym" / "harness" / "scripts"


@pytest.mark.parametrize("name", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_shellcheck_finds_nothing(name):
    checker = shutil.which("shellcheck")
    assert checker, "shellcheck is missing (scripts/setup.sh installs it)"
    done = subprocess.run([checker, "-s", "sh", str(SCRIPTS / name)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout


def listing(tmp_path: Path, kind: str, target: Path, *more: str) -> list[str]:
    """``m_listing`` of one spec line (and ``more`` lines), under the host's static busybox
    (it only reads files)."""
    spec = tmp_path / "spec.txt"
    spec.write_text("".join(f"{line}\n" for line in (f"{kind} {target}", *more)))
    done = subprocess.run([BUSYBOX, "sh", "-c", '. "$1"; m_listing "$2"',
                           "test", str(SCRIPTS / "fingerprint.sh"), str(spec)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.replace(str(tmp_path), "") for line in done.stdout.splitlines()]


def test_a_link_and_a_copy_of_the_same_bytes_list_alike_a_real_folder_for_a_linked_one_does_not(tmp_path):
    tree = tmp_path / "t"
    (tree / "real").mkdir(parents=True)
    (tree / "real" / "lib.so.1.2").write_bytes(b"\x7fELF same bytes")
    (tree / "lib.so.1").symlink_to("real/lib.so.1.2")
    (tree / "dir").symlink_to("real")
    before = listing(tmp_path, "T", tree)
    (tree / "lib.so.1").unlink()
    (tree / "lib.so.1").symlink_to(tree / "real" / "lib.so.1.2")  # absolute now: the same file
    assert listing(tmp_path, "T", tree) == before
    (tree / "lib.so.1").unlink()
    shutil.copy(tree / "real" / "lib.so.1.2", tree / "lib.so.1")  # a copy: the same bytes
    assert listing(tmp_path, "T", tree) == before
    (tree / "dir").unlink()
    shutil.copytree(tree / "real", tree / "dir")  # a real folder where a link to one was
    assert listing(tmp_path, "T", tree) != before


def venv_bin(tmp_path: Path) -> tuple[Path, list[str]]:
    """A venv's bin folder with its interpreter (python3, and python and python3.11 linked
    to it) and the I lines that name them."""
    bindir = tmp_path / "venv" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "python3").write_bytes(b"\x7fELF an interpreter\n")
    (bindir / "python3").chmod(0o755)
    (bindir / "python").symlink_to("python3")
    (bindir / "python3.11").symlink_to("python3")
    return bindir, [f"I {bindir / n}" for n in ("python", "python3", "python3.11")]


@pytest.mark.parametrize("name", ["tool", "python-tool", "python3-config", "pythonista"])
def test_console_scripts_differ_only_in_what_runs_whatever_their_name(tmp_path, name):
    bindir, interps = venv_bin(tmp_path)
    script = bindir / name
    script.write_text(f"#!{bindir}/python\nimport sys\nsys.exit(0)\n")
    script.chmod(0o755)
    before = listing(tmp_path, "P", bindir, *interps)
    assert f"script /venv/bin/{name} x" in " ".join(before)
    for interpreter in ("python3", "python3.11"):  # pip run as python3 or python3.11
        script.write_text(f"#!{bindir}/{interpreter}\nimport sys\nsys.exit(0)\n")
        assert listing(tmp_path, "P", bindir, *interps) == before
    for other in ("/usr/bin/python3", f"{bindir}/python3.1", f"{bindir}/python -E"):  # another interpreter
        script.write_text(f"#!{other}\nimport sys\nsys.exit(0)\n")
        assert listing(tmp_path, "P", bindir, *interps) != before
    script.write_bytes(f"#!{bindir}/python\0#\nimport sys\nsys.exit(0)\n".encode())  # a NUL in the line
    assert listing(tmp_path, "P", bindir, *interps) != before
    script.write_text(f"#!{bindir}/python\nimport sys\nsys.exit(0)\n")
    script.chmod(0o644)  # may no longer run
    assert listing(tmp_path, "P", bindir, *interps) != before


def test_the_interpreter_itself_is_compared_by_its_bytes(tmp_path):
    bindir, interps = venv_bin(tmp_path)
    before = listing(tmp_path, "P", bindir, *interps)
    (bindir / "python3").write_text(f"#!{bindir}/python\n")  # a script naming itself is another file
    assert listing(tmp_path, "P", bindir, *interps) != before


def test_every_folder_on_path_judges_scripts_by_what_they_run(tmp_path):
    """A script pip wrote into another folder on PATH, naming gold's interpreter, is judged as
    one in the interpreter's own folder; a folder inside a folder on PATH is listed whole."""
    bindir, interps = venv_bin(tmp_path)
    other = tmp_path / "local" / "bin"
    other.mkdir(parents=True)
    (other / "python-tool").write_text(f"#!{bindir}/python3\nrun()\n")
    (other / "sub").mkdir()
    (other / "sub" / "mod.py").write_text("x = 1\n")
    before = listing(tmp_path, "P", other, *interps)
    (other / "python-tool").write_text(f"#!{bindir}/python\nrun()\n")
    assert listing(tmp_path, "P", other, *interps) == before
    (other / "sub" / "mod.py").write_text("x = 2\n")
    assert listing(tmp_path, "P", other, *interps) != before


def test_a_site_directory_lists_what_is_under_a_tilde_name(tmp_path):
    """importlib.metadata reads a ~x.dist-info folder as a distribution (its entry points
    load pytest plugins): nothing in a site directory is left out for its name."""
    site = tmp_path / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("")
    before = listing(tmp_path, "S", site)
    (site / "~x-1.0.dist-info").mkdir()
    (site / "~x-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\nx = pkg\n")
    assert listing(tmp_path, "S", site) != before


def test_pyvenv_cfg_is_read_as_the_interpreter_reads_it(tmp_path):
    cfg = tmp_path / "pyvenv.cfg"
    cfg.write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n"
                   "command = /usr/bin/python3 -m venv /opt/venv\n")
    before = listing(tmp_path, "C", cfg)
    cfg.write_text("home=/usr/bin\ninclude-system-site-packages = false\nversion = 3.11.9\n"
                   "command = /usr/bin/python3 -m venv --clear /opt/venv\n")  # keys it does not read
    assert listing(tmp_path, "C", cfg) == before
    cfg.write_text("Home = /srv/bin\nhome = /usr/bin\ninclude-system-site-packages = false\n")
    assert listing(tmp_path, "C", cfg) != before


def test_the_guard_lets_through_exactly_the_harness_commands():
    """The guard's launcher sends to its verifier phase the commands Harbor runs after the
    agent (as cligym's runner writes them too), and nothing an agent types that resembles
    them: its patterns (POSIX ERE, which Python's re reads alike here) decide."""
    from cligym.harness.trial import REWARD_FILE, REWARD_JSON, TEST_COMMAND, TESTS_DIR

    source = (SCRIPTS / "guard-launcher.c").read_text()
    patterns = re.findall(r'^    "(\^.*\$)",$', source, re.M)
    assert len(patterns) == 4
    patterns = [re.compile(p.encode().decode("unicode_escape")) for p in patterns]

    def phase(command: str) -> bool:
        return ".." not in command and any(p.fullmatch(command) for p in patterns)

    for command in (f"rm -f -- {REWARD_FILE} {REWARD_JSON}", f"chmod +x {TESTS_DIR}/test.sh", TEST_COMMAND,
                    f"{TESTS_DIR}/test.sh > /logs/verifier/test-stdout.txt 2>&1"):
        assert phase(command), command
    for command in ("ls /logs/verifier", f"rm -rf -- {REWARD_FILE}", f"chmod +x {TESTS_DIR}/test.sh; id",
                    f"({TESTS_DIR}/../bin/x) > /logs/verifier/o 2>&1", f"cat {TESTS_DIR}/test.sh",
                    f"({TESTS_DIR}/test.sh) > /tmp/o 2>&1", f"tmux send-keys '{TEST_COMMAND}' Enter"):
        assert not phase(command), command


def test_the_entry_scripts_name_the_harness_places_the_code_uses():
    """test.sh and run-tests.sh are files with the harness's fixed places
    written out: they must be the places ``harness.trial`` uses."""
    from cligym.harness.bundle import harbor_test_sh, tb_run_tests
    from cligym.harness.trial import TESTS_DIR, VERIFIER_LOGS

    assert harbor_test_sh().splitlines()[0] == f"#!{TESTS_DIR}/bin/busybox sh"
    assert harbor_test_sh().splitlines()[-1].endswith(
        f"{TESTS_DIR}/reference/verifier.sh harbor {TESTS_DIR} {VERIFIER_LOGS}")
    line = tb_run_tests("/agent logs").splitlines()[-1]
    assert line.startswith(f'exec "${{TEST_DIR:-{TESTS_DIR}}}"/bin/busybox sh') and line.endswith(" '/agent logs'")


def judge(tmp_path: Path, keys: str, cases: str, program: str | None = None) -> tuple[int, list[str]]:
    """judge.awk (or ``program``) under the host's busybox awk, as the verifier runs it."""
    (tmp_path / "keys.tsv").write_text(keys)
    (tmp_path / "cases.txt").write_text(cases)
    text = (SCRIPTS / "judge.awk").read_text() if program is None else program
    done = subprocess.run([BUSYBOX, "awk", text, str(tmp_path / "keys.tsv"), str(tmp_path / "cases.txt")],
                          check=False, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout.splitlines()


def test_the_judge_says_how_many_of_how_many_passed(tmp_path):
    keys = "t.py::a\tt\ta\nt.py::b\tt\tb\n"
    passed = '<testcase classname="t" name="a" time="0" />\n<testcase classname="t" name="b" time="0" />\n'
    # a line per listed test, as pytest's -rA summary (Terminal-Bench reads them), then the count
    assert judge(tmp_path, keys, passed) == (0, ["PASSED t.py::a", "PASSED t.py::b", "2 of 2 passed"])
    failed = '<testcase classname="t" name="a" time="0" />\n<testcase classname="t" name="b"><failure /></testcase>\n'
    assert judge(tmp_path, keys, failed) == (1, ["PASSED t.py::a", "FAILED t.py::b - not passed", "1 of 2 passed"])
    assert judge(tmp_path, keys, passed.splitlines()[0] + "\n") == (1, ["PASSED t.py::a",
                                                                       "FAILED t.py::b - not in the test report",
                                                                       "1 of 2 passed"])
    # an empty judge prints nothing and exits 0: the verifier wants the count line, and
    # refuses an empty judge before the tests run
    assert judge(tmp_path, keys, failed, program="") == (0, [])


def test_the_project_listing_leaves_out_site_directories_by_path_not_by_name(tmp_path):
    """A folder of the project named site-packages is the project's (tests may read what is
    in it); a site directory inside the project is listed whole by its S entry; of git's
    folders only the project's own is left out."""
    project = tmp_path / "testbed"
    (project / "tests" / "site-packages").mkdir(parents=True)
    (project / "tests" / "site-packages" / "data.txt").write_text("expected\n")
    venv_site = project / ".venv" / "lib" / "python3.11" / "site-packages"
    venv_site.mkdir(parents=True)
    (venv_site / "x.py").write_text("")
    (project / ".git").mkdir()
    (project / ".git" / "index").write_text("")
    (project / "tests" / "repo" / ".git").mkdir(parents=True)
    (project / "tests" / "repo" / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    sites = tmp_path / "sites.txt"
    sites.write_text(f"{venv_site}\n")
    done = subprocess.run([BUSYBOX, "sh", "-c", '. "$1"; m_workdir "$2" "$3"', "test",
                           str(SCRIPTS / "fingerprint.sh"), str(project), str(sites)],
                          check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    paths = {line.split(" ")[1].replace(str(project), "") for line in done.stdout.splitlines()}
    assert paths == {"/tests/site-packages/data.txt", "/tests/repo/.git/HEAD"}, paths


def test_a_program_entry_says_whether_it_may_run(tmp_path):
    """X lists a program as F does, then whether it may run: a chmod a-x shows."""
    import stat
    import subprocess

    from cligym.harness.bundle import script

    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    spec = tmp_path / "spec"
    spec.write_text(f"X {program}\nX {tmp_path / 'gone'}\n")
    funcs = tmp_path / "fingerprint.sh"
    funcs.write_text(script("fingerprint.sh"))

    def listed() -> list[str]:
        run = subprocess.run([BUSYBOX, "sh", "-c", f". {funcs}; m_listing {spec}"], capture_output=True,
                             text=True, check=True)
        return run.stdout.splitlines()

    runnable = listed()
    assert f"absent {tmp_path / 'gone'} -" in runnable and any(line.endswith(" x") for line in runnable), runnable
    program.chmod(program.stat().st_mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    now = listed()
    assert now != runnable and any(line.startswith(f"file {program} ") and line.endswith(" -") for line in now)


def test_the_fresh_bytecode_cache_holds_only_what_still_has_golds_bytes(tmp_path):
    """m_bytecode hashes the bytecode files gold's run read; in the repaired machine,
    m_seed_bytecode links into the fresh cache (where the interpreter looks for DIR/NAME.py's:
    CACHE/DIR/NAME.pyc) only those that still hold gold's bytes, and leaves nothing else in
    their __pycache__ folders: a forged file, a planted one and a linked folder are not read."""
    stdlib, site = tmp_path / "lib", tmp_path / "site"
    gold_files = {stdlib / "__pycache__" / "os.cpython-311.pyc": b"os", stdlib / "__pycache__" / "copy.cpython-311.pyc":
                  b"copy", stdlib / "email" / "__pycache__" / "mime.cpython-311.pyc": b"mime",
                  site / "pkg" / "__pycache__" / "m.cpython-311.pyc": b"m", site / "linked" / "__pycache__" /
                  "l.cpython-311.pyc": b"l"}
    for path, data in gold_files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    paths = tmp_path / "read.txt"
    paths.write_text("".join(f"{p}\n" for p in gold_files))

    def sh(command: str, *args: str) -> str:
        done = subprocess.run([BUSYBOX, "sh", "-c", f'. "$1"; shift; {command}', "test",
                               str(SCRIPTS / "fingerprint.sh"), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    listed = sh('m_bytecode "$1"', str(paths))
    assert sorted(line.split("  ", 1)[1] for line in listed.splitlines()) == sorted(map(str, gold_files))
    reference = tmp_path / "bytecode.txt"
    reference.write_text(listed)

    (stdlib / "__pycache__" / "copy.cpython-311.pyc").write_bytes(b"forged")  # another's bytes
    (stdlib / "__pycache__" / "planted.cpython-311.pyc").write_bytes(b"planted")  # gold's run read none there
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "l.cpython-311.pyc").write_bytes(b"l")  # gold's bytes, in a folder linked in
    shutil.rmtree(site / "linked" / "__pycache__")
    (site / "linked" / "__pycache__").symlink_to(elsewhere)
    mime = stdlib / "email" / "__pycache__" / "mime.cpython-311.pyc"
    mime.unlink()
    os.mkfifo(mime)  # a FIFO where gold had a file: not read (it would hold the reading forever)
    cache = tmp_path / "cache"
    cache.mkdir()
    sh('m_seed_bytecode "$1" "$2"', str(reference), str(cache))

    seeded = {p.relative_to(cache): p.resolve() for p in cache.rglob("*.pyc")}
    kept = [stdlib / "__pycache__" / "os.cpython-311.pyc", site / "pkg" / "__pycache__" / "m.cpython-311.pyc"]
    # where the interpreter looks for DIR/NAME.py's bytecode: CACHE/DIR/NAME.cpython-311.pyc
    assert seeded == {Path(str(p.parent.parent)[1:]) / p.name: p for p in kept}, seeded
    assert sorted(p.name for p in (stdlib / "__pycache__").iterdir()) == ["os.cpython-311.pyc"]
    assert (elsewhere / "l.cpython-311.pyc").exists()  # a linked folder is not entered, nor emptied
