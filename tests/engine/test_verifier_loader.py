"""What the kernel and the dynamic loader load, judged before anything of the image runs,
shown on a real exported task (markupsafe, Harbor) after its oracle's repair.

- The program loader: every dynamically linked program names ``/lib64/ld-linux-x86-64.so.2``
  (its PT_INTERP), reached through ``/lib64 -> usr/lib64`` and a link there. Replaced by a
  static stand-in that leaves a marker when it runs with the harness's capabilities and
  hands every program on to the real loader (``/usr/bin/ld.so``, which links there, made a
  copy of the real one), it is reward 0, the reason names the loader, and the stand-in
  never ran: the verifier starts nothing of the image (no ``comm``) before its listing
  is judged.
- Where the loader finds libraries: a folder named in ``/etc/ld.so.conf.d`` (with
  ``ldconfig``), a cache built from another configuration, a ``glibc-hwcaps`` or legacy
  hwcap subfolder of a library folder, ``nsswitch.conf`` (it names the ``libnss_*``
  modules glibc loads) and OpenSSL's configuration (a provider module it names runs in
  every process that imports hashlib) are reward 0; ``ldconfig`` run by an honest repair
  is reward 1.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cligym.harness.trial import _test_sh, judging, run_oracle
from cligym.layout import TaskDir
from tests.engine.test_verifier_holes import oracle_then, shadow_task  # noqa: F401 (a fixture)
from tests.verifier_runs import harbor_container, harbor_way

MARKER = "/tmp/cligym-loader-ran"
REAL_LOADER = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
#: A PT_INTERP stand-in without libc (static-pie, raw system calls): with every capability
#: PID 1 holds (a command of the harness) it appends to the marker file; then it hands the
#: program on to the real loader.
STAND_IN = r"""
typedef unsigned long u64;
static long sc(long n, long a, long b, long c) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return r;
}
struct hdr { unsigned version; int pid; };
struct data { unsigned eff, perm, inh; };
__attribute__((used)) void cmain(long *sp) {
    long argc = sp[0];
    char **argv = (char **)(sp + 1);
    char **envp = argv + argc + 1;
    struct hdr me = {0x20080522, 0}, one = {0x20080522, 1};
    struct data mine[2], pid1[2];
    if (sc(125, (long)&me, (long)mine, 0) == 0 && sc(125, (long)&one, (long)pid1, 0) == 0
        && mine[0].eff == pid1[0].eff && mine[1].eff == pid1[1].eff && mine[0].eff != 0) {
        long fd = sc(2, (long)"@MARKER@", 01 | 0100 | 02000, 0644);
        if (fd >= 0) { sc(1, fd, (long)"ran\n", 4); sc(3, fd, 0, 0); }
    }
    static char exe[4096];
    long n = sc(89, (long)"/proc/self/exe", (long)exe, sizeof exe - 1);
    if (n <= 0) sc(231, 127, 0, 0);
    exe[n] = 0;
    char *args[argc + 4];
    int k = 0;
    args[k++] = "@REAL@";
    args[k++] = "--argv0";
    args[k++] = argv[0];
    args[k++] = exe;
    for (long i = 1; i < argc; i++) args[k++] = argv[i];
    args[k] = 0;
    sc(59, (long)args[0], (long)args, (long)envp);
    sc(231, 127, 0, 0);
}
__asm__(".text\n.global _start\n_start:\n mov %rsp, %rdi\n and $-16, %rsp\n call cmain\n hlt\n");
void *memcpy(void *d, const void *s, u64 n) { char *a = d; const char *b = s; while (n--) *a++ = *b++; return d; }
void *memset(void *d, int c, u64 n) { char *a = d; while (n--) *a++ = (char)c; return d; }
"""
#: After the oracle's repair: /usr/bin/ld.so (a link to /lib64/ld-linux-x86-64.so.2, listed
#: as a program on PATH by what it opens) made a copy of the real loader, then the stand-in
#: put where /lib64/ld-linux-x86-64.so.2 leads (the link in /usr/lib64).
REPLACE = (f"cp --remove-destination {REAL_LOADER} /usr/bin/ld.so "
           "&& cp /solution/stand-in /usr/lib64/.stand-in && chmod 755 /usr/lib64/.stand-in "
           "&& mv -f /usr/lib64/.stand-in /usr/lib64/ld-linux-x86-64.so.2")


def stand_in(folder: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler (the guard's launcher needs one too)"
    source = folder / "stand-in.c"
    source.write_text(STAND_IN.replace("@MARKER@", MARKER).replace("@REAL@", REAL_LOADER))
    out = folder / "stand-in"
    subprocess.run([cc, "-nostdlib", "-static-pie", "-fPIE", "-O2", "-fno-stack-protector", "-fno-builtin",
                    "-o", str(out), str(source)], check=True, capture_output=True, timeout=120)
    return out


def judge_with_marker(runtime, tag: str, task: TaskDir, runner: str):
    """The oracle slot, then the verifier by ``runner``; (the reward, the marker file's
    text in the container the verifier ran in, or None)."""
    with harbor_container(runtime, tag, task) as session:
        run_oracle(session, task)
        if runner == "harbor":
            return harbor_way(session, task), session.get_file(MARKER)
        with judging(session, task) as (fresh, shell, timer):
            return _test_sh(fresh, task, shell, timer), fresh.get_file(MARKER)


@pytest.mark.parametrize("runner", ["cligym", "harbor"])
def test_a_program_loader_replaced_by_a_static_stand_in_scores_zero_and_never_runs(runner, shadow_task, runtime,  # noqa: F811 - the fixture imported above
                                                                                     tmp_path):
    task_dir, tag = shadow_task
    task = oracle_then(task_dir, tmp_path / "task", REPLACE)
    shutil.copy(stand_in(tmp_path), task.solution / "stand-in")
    # (the guard's sums cover tests/, not solution/: the copy keeps its guard)
    result, marker = judge_with_marker(runtime, tag, task, runner)
    assert marker is None, f"the stand-in ran with the harness's capabilities: {marker!r} ({result})"
    assert result.reward == 0.0, result
    assert "ld-linux-x86-64.so.2" in result.detail and "differs from gold" in result.detail, result


#: After the oracle's repair: what a repair may leave where the loader looks, the verdict,
#: and what its reason names.
LOADER_PLACES = {
    "ld_so_conf_folder_and_ldconfig": (
        "mkdir -p /opt/cligym-libs && cp /usr/lib/x86_64-linux-gnu/libc.so.6 /opt/cligym-libs/ "
        "&& echo /opt/cligym-libs > /etc/ld.so.conf.d/0-cligym.conf && ldconfig", 0.0, "ld.so.c"),
    "cache_from_another_configuration": (
        "mkdir -p /opt/cligym-libs && cp /usr/lib/x86_64-linux-gnu/libz.so.1 /opt/cligym-libs/libcligym.so.1 "
        "&& printf '/opt/cligym-libs\\ninclude /etc/ld.so.conf.d/*.conf\\n' > /tmp/other.conf "
        "&& ldconfig -f /tmp/other.conf", 0.0, "/etc/ld.so.cache"),
    "glibc_hwcaps_subfolder": (
        "mkdir -p /usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v2 "
        "&& cp /usr/lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v2/", 0.0,
        "glibc-hwcaps"),
    "legacy_hwcap_subfolder": (
        "mkdir -p /usr/lib/x86_64-linux-gnu/x86_64 && cp /usr/lib/x86_64-linux-gnu/libz.so.1 "
        "/usr/lib/x86_64-linux-gnu/x86_64/", 0.0, "x86_64-linux-gnu/x86_64"),
    "nsswitch_module": ("sed -i 's/^passwd:.*/passwd: files cligym/' /etc/nsswitch.conf", 0.0, "/etc/nsswitch.conf"),
    "openssl_provider_module": (
        "sed -i 's/^# providers = provider_sect/providers = provider_sect/' /etc/ssl/openssl.cnf && printf "
        "'[provider_sect]\\nx = x_sect\\ndefault = default_sect\\n[default_sect]\\nactivate = 1\\n"
        "[x_sect]\\nmodule = /opt/cligym-provider.so\\nactivate = 1\\n' >> /etc/ssl/openssl.cnf",
        0.0, "/usr/lib/ssl/openssl.cnf"),
    "honest_ldconfig": ("ldconfig", 1.0, "all "),
}


@pytest.mark.parametrize("place", sorted(LOADER_PLACES))
def test_where_the_loader_looks_for_libraries_is_gold(place, shadow_task, runtime, tmp_path):  # noqa: F811 - the fixture
    task_dir, tag = shadow_task
    more, reward, reason = LOADER_PLACES[place]
    result, _ = judge_with_marker(runtime, tag, oracle_then(task_dir, tmp_path / "task", more), "cligym")
    assert result.reward == reward and reason in result.detail, result
