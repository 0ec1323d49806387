"""The Debian probe's pure parts: strace's per-process traces read into what one
autopkgtest test touched, dpkg's tools' output read into facts, and the probe record."""

# ruff: noqa: E501  (strace's lines as it prints them)
from __future__ import annotations

import io
import tarfile

import pytest

from cligym.debian import dpkg_facts
from cligym.debian.probe import autopkgtest_names, read_traces, results_file, touch_of
from cligym.debian.strace import absolute, is_noise, is_shared_object, parse_line, touched, unescape
from cligym.errors import CligymError
from cligym.models.debian_probe import SCHEMA_VERSION, DebianProbe, DebianTouch, Program

WORKDIR = "/usr/src/json-c"
RESULTS = "/tmp/cligym-probe/results-0"
ENV = '["HOME=/root", "AUTOPKGTEST_TMP=/tmp/cligym-probe/results-0/.tmp.x", "PATH=/usr/bin:/bin"]'

#: The runner: forks a helper (mktemp) and the test's subshell, which opens the test's
#: stdout, execs the test script; the script's shell forks make, which changes directory
#: and runs a test binary by a relative path.
RUNNER = f"""\
execve("/opt/cligym/debian/debtest.sh", ["/opt/cligym/debian/debtest.sh", "unit-test"], {ENV}) = 0
openat(AT_FDCWD</usr/src/json-c>, "/opt/cligym/debian/tests.tsv", O_RDONLY) = 3</opt/cligym/debian/tests.tsv>
clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = 11
clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = 12
"""
HELPER = f"""\
execve("/usr/bin/mktemp", ["mktemp", "-d", "/tmp/x"], {ENV}) = 0
openat(AT_FDCWD</usr/src/json-c>, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3</etc/ld.so.cache>
"""
SUBSHELL = f"""\
openat(AT_FDCWD</usr/src/json-c>, "/dev/null", O_RDONLY) = 3</dev/null>
openat(AT_FDCWD</usr/src/json-c>, "{RESULTS}/unit-test.stdout", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</{RESULTS[1:]}/unit-test.stdout>
faccessat2(AT_FDCWD</usr/src/json-c>, "debian/tests/unit-test", X_OK, AT_EACCESS) = 0
execve("./debian/tests/unit-test", ["./debian/tests/unit-test"], {ENV}) = 0
access("/etc/ld.so.preload", R_OK)      = -1 ENOENT (No such file or directory)
openat(AT_FDCWD</usr/src/json-c>, "/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY|O_CLOEXEC) = 3</usr/lib/x86_64-linux-gnu/libc.so.6>
newfstatat(3</usr/lib/x86_64-linux-gnu/libc.so.6>, "", {{st_mode=S_IFREG|0755, st_size=1926232, ...}}, AT_EMPTY_PATH) = 0
openat(AT_FDCWD</usr/src/json-c>, "/usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libjson-c.so.5", O_RDONLY|O_CLOEXEC) = -1 ENOENT (No such file or directory)
openat(AT_FDCWD</usr/src/json-c>, "/proc/self/maps", O_RDONLY) = 3</proc/1/maps>
vfork()                                 = 13
"""
MAKE = f"""\
execve("/usr/bin/make", ["make", "-C", "build"], {ENV}) = 0
chdir("build")                          = 0
stat("tests/Makefile", {{st_mode=S_IFREG|0644, st_size=262, ...}}) = 0
openat(AT_FDCWD</usr/src/json-c/build>, "/usr/share/doc", O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY) = 3</usr/share/doc>
openat(AT_FDCWD</usr/src/json-c/build>, "json.conf", O_RDONLY) = -1 ENOENT (No such file or directory)
openat(AT_FDCWD</usr/src/json-c/build>, "secret", O_RDONLY) = -1 EACCES (Permission denied)
clone3({{flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, stack=0x7f, stack_size=0x9000}}, 88) = 14
"""
BINARY = f"""\
execve("./tests/test1", ["./tests/test1"], {ENV}) = 0
execve("/usr/local/bin/as", ["as", "--64"], {ENV}) = -1 ENOENT (No such file or directory)
"""
TRACES = {10: RUNNER, 11: HELPER, 12: SUBSHELL, 13: MAKE, 14: BINARY}


def test_a_line_gives_its_path_made_absolute_and_its_kernel_name() -> None:
    event = parse_line('openat(AT_FDCWD</w>, "lib/x.so", O_RDONLY|O_CLOEXEC) = 3</usr/lib/x.so.1>', "/elsewhere")
    assert event is not None and (event.kind, event.path, event.real) == ("open", "/w/lib/x.so", "/usr/lib/x.so.1")
    event = parse_line('stat("../a b", {st_mode=S_IFREG|0644, ...}) = 0', "/w/sub")
    assert event is not None and (event.kind, event.path) == ("lookup", "/w/a b")
    assert parse_line('access("/x", R_OK) = -1 EACCES (Permission denied)', "/") is None
    assert parse_line('newfstatat(3</x>, "", {st_mode=S_IFREG, ...}, AT_EMPTY_PATH) = 0', "/") is None
    assert parse_line("+++ exited with 0 +++", "/") is None
    missing = parse_line('openat(AT_FDCWD</w>, "x.so", O_RDONLY) = -1 ENOENT (No such file or directory)', "/")
    assert missing is not None and (missing.kind, missing.path) == ("missing", "/w/x.so")


def test_exec_lines_give_the_path_the_first_argument_and_the_environment() -> None:
    event = parse_line('execve("/usr/bin/perl", ["perl", "-e", "print \\"]\\""], ["A=1", "B=x=y"]) = 0', "/")
    assert event is not None and (event.path, event.argv0) == ("/usr/bin/perl", "perl")
    assert event.env == {"A": "1", "B": "x=y"}
    event = parse_line('execve("/usr/bin/cc", ["/usr/lib/gcc/x86_64-linux-gnu/12"..., "-c"], 0x7ff /* 3 vars */) = 0',
                       "/")
    assert event is not None and event.argv0 == "/usr/lib/gcc/x86_64-linux-gnu/12" and event.env is None


def test_strings_are_unescaped_and_paths_normalised() -> None:
    assert unescape(r"a\"b\\c\n\303\251") == 'a"b\\c\né'
    assert absolute("../.././x", "/usr/lib/gcc/12") == "/usr/lib/x"
    assert absolute("/a//b/", "/ignored") == "/a/b"


def test_only_the_tests_own_processes_count_with_their_working_directories() -> None:
    got = touched(TRACES, f"{RESULTS}/unit-test.stdout", WORKDIR)
    assert got.processes == 3  # the subshell, make, the test binary: not the runner, not mktemp
    assert got.programs == {"/usr/src/json-c/debian/tests/unit-test": "./debian/tests/unit-test",
                            "/usr/bin/make": "make", "/usr/src/json-c/build/tests/test1": "./tests/test1"}
    assert "/usr/bin/mktemp" not in got.programs and "/etc/ld.so.cache" not in got.files
    assert "/usr/lib/x86_64-linux-gnu/libc.so.6" in got.files
    assert got.folders == {"/usr/share/doc"}
    assert "/usr/src/json-c/build/tests/Makefile" in got.lookups
    assert "/usr/src/json-c/build/json.conf" in got.missing
    assert "/usr/src/json-c/build/secret" not in got.missing  # EACCES is not a lookup that found nothing
    assert got.env["HOME"] == "/root" and got.env["PATH"] == "/usr/bin:/bin"


def test_without_the_marker_every_process_counts() -> None:
    assert touched(TRACES, "/nowhere.stdout", WORKDIR).processes == 5


def test_noise_and_shared_objects() -> None:
    ignored = ("/opt/cligym", "/tmp/cligym-probe")
    assert all(is_noise(p, ignored) for p in ["/proc/1/maps", "/dev/null", "/sys", "/opt/cligym/x", "/"])
    assert not any(is_noise(p, ignored) for p in ["/procfs", "/usr/lib/x", "/opt/cligymx"])
    assert is_shared_object("/lib/libc.so.6") and is_shared_object("/x/_ssl.cpython-311-x86_64-linux-gnu.so")
    assert not is_shared_object("/etc/ld.so.cache") and not is_shared_object("/etc/ld.so.preload")


def test_the_record_of_a_test_keeps_the_images_paths() -> None:
    raw = touched(TRACES, f"{RESULTS}/unit-test.stdout", WORKDIR)
    libjson = "/usr/lib/x86_64-linux-gnu/libjson-c.so.5"
    resolved = {
        "/usr/lib/x86_64-linux-gnu/libc.so.6": ["/usr/lib/x86_64-linux-gnu/libc.so.6", True],
        "/usr/share/doc": ["/usr/share/doc", True],
        "/usr/bin/make": ["/usr/bin/make", True],
        "/usr/src/json-c/debian/tests/unit-test": ["/usr/src/json-c/debian/tests/unit-test", True],
        "/usr/src/json-c/build/tests/test1": ["/usr/src/json-c/build/tests/test1", True],
        "/usr/src/json-c/build/tests/Makefile": ["/usr/src/json-c/build/tests/Makefile", True],
        "/usr/src/json-c/build/json.conf": [None, True],
        "/usr/src/json-c/build": ["/usr/src/json-c/build", True],
        "/usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3/libjson-c.so.5": [None, False],
        "/usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3": [None, True],
        libjson: [libjson, True],
    }
    made = {"/usr/src/json-c/build"}  # the test built it: not the image's
    named: dict[str, set[str]] = {}
    touch = touch_of(raw, DebianTouch(processes=raw.processes, exit_code=0), resolved,
                     lambda p: p.startswith(("/proc", "/dev")) or any(p.startswith(m) for m in made), WORKDIR, named)
    assert touch.objects == ["/usr/lib/x86_64-linux-gnu/libc.so.6"] and touch.files == []
    assert [p.path for p in touch.programs] == ["/usr/bin/make", "/usr/src/json-c/debian/tests/unit-test"]
    assert touch.folders == ["/usr/share/doc"] and touch.lookups == []
    assert touch.missing == []  # the hwcaps folder is not in the image, build/ was made by the test
    assert named["/usr/bin/make"] == {"/usr/bin/make"}


def test_names_tests_and_results_files() -> None:
    tsv = "# header\nunit-test\t-\tnone\t-\tpath\tdebian/tests/unit-test\ncommand1\t-\tnone\t-\tcommand\tmake\n"
    assert autopkgtest_names(tsv, []) == ["unit-test", "command1"]
    assert autopkgtest_names(tsv, ["command1::a", "command1::b"]) == ["command1"]
    assert results_file("a b/c") == "a_b_c"


def test_traces_are_read_from_a_gzipped_tar() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in {"./trace.12": SUBSHELL, "./other": "x"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    assert read_traces(buf.getvalue()) == {12: SUBSHELL}
    with pytest.raises(CligymError, match="traces cannot be read"):
        read_traces(b"not a tar")


def test_dpkg_outputs() -> None:
    owners = dpkg_facts.parse_owners(
        "libc6:amd64: /lib/x86_64-linux-gnu/libc.so.6\n"
        "diversion by dash from: /bin/sh\n"
        "base-files, libc6:amd64: /usr/lib\n")
    assert owners["/usr/lib"] == ["base-files", "libc6:amd64"]
    assert dpkg_facts.owner_of("/usr/lib/x86_64-linux-gnu/libc.so.6", [], owners) == ["libc6:amd64"]
    assert dpkg_facts.owner_of("/usr/local/bin/x", [], owners) == []
    assert dpkg_facts.aliases("/bin/sh") == ["/bin/sh", "/usr/bin/sh"]
    assert not dpkg_facts.queryable("/a/[x]")
    found = dpkg_facts.parse_packages(
        "libc6:amd64\t2.36-9\tglibc\tno\trequired\n\nbash\t5.2.15-2\tbash\tyes\trequired\n"
        " /etc/bash.bashrc 89269e1298235f1b12b4c16e4065ad0d\n"
        " /etc/skel/.bashrc ee35a240758f374832e809ae0ea4883a obsolete\n"
        "libyaml-0-2:amd64\t0.2.5-1\tlibyaml\t\toptional\n\n")
    assert found.versions == {"libc6:amd64": "2.36-9", "bash": "5.2.15-2", "libyaml-0-2:amd64": "0.2.5-1"}
    assert found.conffiles == {"bash": ["/etc/bash.bashrc", "/etc/skel/.bashrc"]}
    assert found.sources == {"libc6:amd64": "glibc", "bash": "bash", "libyaml-0-2:amd64": "libyaml"}
    assert found.core == ["libc6:amd64", "bash"]
    alternatives = dpkg_facts.parse_alternatives("cc                             auto     /usr/bin/gcc\n")
    assert (alternatives[0].name, alternatives[0].status, alternatives[0].path) == ("cc", "auto", "/usr/bin/gcc")
    diversions = dpkg_facts.parse_diversions("diversion of /bin/sh to /bin/sh.distrib by dash\n"
                                             "local diversion of /etc/x to /etc/x.orig\n")
    assert [(d.path, d.to, d.by) for d in diversions] == [("/bin/sh", "/bin/sh.distrib", "dash"),
                                                          ("/etc/x", "/etc/x.orig", "")]
    ldconfig = dpkg_facts.parse_ldconfig("2 libs found in cache `/etc/ld.so.cache'\n"
                                         "\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6\n")
    assert ldconfig == [("libc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0)", "/lib/x86_64-linux-gnu/libc.so.6")]


def test_the_record_answers_by_path_and_package() -> None:
    probe = DebianProbe(gold_image_id="sha256:x", workdir=WORKDIR, tests={
        "a": DebianTouch(files=["/etc/x"], programs=[Program(path="/bin/sh", real="/usr/bin/dash", argv0="sh")]),
        "b": DebianTouch(objects=["/usr/lib/libx.so.1"]),
    }, owners={"/usr/bin/dash": ["dash"], "/usr/lib/libx.so.1": ["libx1:amd64"], "/etc/x": []})
    assert probe.paths() == {"/etc/x", "/usr/bin/dash", "/usr/lib/libx.so.1"}
    assert probe.touching("/usr/bin/dash") == ["a"] and probe.touching("/usr/lib/libx.so.1") == ["b"]
    assert probe.owned_by("libx1") == ["/usr/lib/libx.so.1"]
    again = DebianProbe.model_validate_json(probe.model_dump_json())
    assert again == probe and again.schema_version == SCHEMA_VERSION


def test_a_search_miss_is_a_shadow_site_of_the_file_found_later() -> None:
    from cligym.debian.probe import search_misses

    opened = {"/usr/lib/x86_64-linux-gnu/perl5/5.36/YAML/XS.pm", "/usr/share/perl/5.36/strict.pm",
              "/usr/lib/x86_64-linux-gnu/libyaml-0.so.2.0.9", "/usr/lib/locale/C.utf8/LC_CTYPE"}
    missing = {"/usr/local/share/perl/5.36.0/YAML/XS.pm",  # the module's folder and file: a shadow
               "/usr/local/lib/site_perl/strict.pm",  # a file name with an extension
               "/usr/local/lib/XS.pm",  # the file name alone (a search for another module, maybe: the screen tells)
               "/usr/lib/locale/C.UTF-8/LC_CTYPE",  # no extension, another folder
               "/usr/share/perl/5.36/strict.pm"}  # the file itself is never its own shadow
    assert search_misses(missing, opened) == {
        "/usr/local/share/perl/5.36.0/YAML/XS.pm": "/usr/lib/x86_64-linux-gnu/perl5/5.36/YAML/XS.pm",
        "/usr/local/lib/site_perl/strict.pm": "/usr/share/perl/5.36/strict.pm",
        "/usr/local/lib/XS.pm": "/usr/lib/x86_64-linux-gnu/perl5/5.36/YAML/XS.pm",
    }
