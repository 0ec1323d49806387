/* cligym's guard launcher: the `bash` that a harness's `bash -c CMD` finds first in an
 * exported Harbor task's container. The task's docker-compose.yaml mounts the guard folder
 * read-only at /cligym and puts /cligym/bin first on PATH, so every command the harness
 * runs in the container, the agent's and the verifier's, starts here. Built static
 * (`cc -static`): nothing of the image runs before it decides.
 *
 * - A command of the harness's verifier phase, in the exact forms Harbor runs them
 *   (`rm -f -- /logs/verifier/...`, `chmod +x /tests/...`, `(/tests/...) > /logs/verifier/... 2>&1`),
 *   asked for by the harness itself, goes to the guard's phase.sh under the guard's
 *   static busybox, with every capability kept: phase.sh stops every other process
 *   first, then does the command with nothing of the image's.
 * - Anything else (the agent's commands) runs in the image's own bash, the next one on
 *   PATH, after one capability is dropped from every set, the bounding set included. A
 *   process may trace another (ptrace, /proc/PID/mem, process_vm_writev) only if the
 *   other's permitted capabilities are a subset of its own, so nothing the agent starts can
 *   trace PID 1 or any later command of the harness, this launcher's verifier phase
 *   included; the agent can still trace its own processes (strace works).
 *
 * "Asked for by the harness" means: this process holds every capability PID 1 holds, which
 * no descendant of an agent's command does, and it runs as root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Dropped from the agent's commands, in this order of preference: the first the container
 * grants. None is needed to repair an environment. */
static const int DROP[] = {CAP_AUDIT_WRITE, CAP_MKNOD, CAP_NET_RAW, CAP_SYS_CHROOT, CAP_NET_BIND_SERVICE};

/* The verifier phase's commands, exactly as a harness writes them. */
static const char *PHASE[] = {
    "^rm -f -- /logs/verifier/[A-Za-z0-9_][A-Za-z0-9._-]*( /logs/verifier/[A-Za-z0-9_][A-Za-z0-9._-]*)*$",
    "^chmod \\+x /tests/[A-Za-z0-9_][A-Za-z0-9._/-]*$",
    "^\\(/tests/[A-Za-z0-9_][A-Za-z0-9._/-]*\\) > /logs/verifier/[A-Za-z0-9_][A-Za-z0-9._-]* 2>&1$",
    "^/tests/[A-Za-z0-9_][A-Za-z0-9._/-]* > /logs/verifier/[A-Za-z0-9_][A-Za-z0-9._-]* 2>&1$",
};

static void die(const char *what) {
    fprintf(stderr, "cligym guard: %s: %s\n", what, strerror(errno));
    exit(126);
}

/* The hex value of "KEY:\t..." in /proc/PID/status, or -1. */
static long long status_caps(const char *pid, const char *key) {
    char path[64], line[256];
    size_t n = strlen(key);
    long long value = -1;
    snprintf(path, sizeof path, "/proc/%s/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, n) == 0 && line[n] == ':') {
            value = strtoll(line + n + 1, NULL, 16);
            break;
        }
    }
    fclose(f);
    return value;
}

static int is_phase_command(int argc, char **argv) {
    if (argc != 3 || strcmp(argv[1], "-c") != 0 || strstr(argv[2], "..")) return 0;
    for (size_t i = 0; i < sizeof PHASE / sizeof *PHASE; i++) {
        regex_t re;
        if (regcomp(&re, PHASE[i], REG_EXTENDED | REG_NOSUB) != 0) continue;
        int hit = regexec(&re, argv[2], 0, NULL, 0) == 0;
        regfree(&re);
        if (hit) return 1;
    }
    return 0;
}

/* Drop one capability from the bounding, inheritable, permitted, effective and ambient
 * sets. Only a process that still holds all of PID 1's does it (a nested bash of the
 * agent's has dropped one already). */
static void drop_one(long long mine, long long pid1) {
    if (mine != pid1 || mine <= 0) return;
    int cap = -1;
    for (size_t i = 0; i < sizeof DROP / sizeof *DROP && cap < 0; i++)
        if (mine & (1LL << DROP[i])) cap = DROP[i];
    for (int c = 63; c >= 0 && cap < 0; c--)
        if (mine & (1LL << c)) cap = c;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
        if (geteuid() != 0) return; /* no capability to trace anything of root's with */
        die("cannot drop a capability from the bounding set");
    }
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &head, data) != 0) die("capget");
    unsigned word = (unsigned)cap / 32, bit = 1u << (cap % 32);
    data[word].effective &= ~bit;
    data[word].permitted &= ~bit;
    data[word].inheritable &= ~bit;
    if (syscall(SYS_capset, &head, data) != 0) die("capset");
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

/* The image's bash: the first on PATH outside this launcher's own folder. */
static void exec_image_bash(char **argv, const char *own) {
    const char *path = getenv("PATH");
    char *copy = strdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
    char resolved[PATH_MAX], candidate[PATH_MAX];
    for (char *dir = strtok(copy, ":"); dir; dir = strtok(NULL, ":")) {
        if (!*dir || (realpath(dir, resolved) && strcmp(resolved, own) == 0)) continue;
        snprintf(candidate, sizeof candidate, "%s/bash", dir);
        if (access(candidate, X_OK) == 0) execv(candidate, argv);
    }
    execv("/bin/bash", argv);
    execv("/bin/sh", argv);
    die("no bash in the image");
}

int main(int argc, char **argv) {
    char self[PATH_MAX], own[PATH_MAX], root[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) die("cannot read /proc/self/exe");
    self[n] = 0;
    strcpy(own, self);
    *strrchr(own, '/') = 0; /* .../bin */
    snprintf(root, sizeof root, "%s", own);
    *strrchr(root, '/') = 0; /* the guard folder */

    long long mine = status_caps("self", "CapBnd"), pid1 = status_caps("1", "CapBnd");
    long long effective = status_caps("self", "CapEff");
    if (geteuid() == 0 && mine == pid1 && effective == mine && is_phase_command(argc, argv)) {
        char busybox[PATH_MAX + 32], phase[PATH_MAX + 32];
        snprintf(busybox, sizeof busybox, "%s/busybox", root);
        snprintf(phase, sizeof phase, "%s/phase.sh", root);
        char *args[] = {"busybox", "sh", phase, argv[2], NULL};
        execv(busybox, args);
        die("cannot start the guard's busybox");
    }
    drop_one(mine, pid1);
    exec_image_bash(argv, own);
    return 126;
}
