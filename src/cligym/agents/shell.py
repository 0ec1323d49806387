"""The shell behind ``execute_bash``: one interactive bash in a tmux session inside the
container, so the working directory, shell variables, functions, aliases and background
jobs persist between calls, as in the paper's tool set.

Each command is copied into the container as a file and typed into the pane as
``source FILE > OUT 2>&1 < /dev/null; echo $? > RC``; a second exec waits for RC (or for the
shell to die). A command that overruns its timeout gets Ctrl-C, as at a terminal; a shell
that does not come back after that, or that exited (``exit``, ``set -e``), is killed with
everything it started and a new one is started in the work directory, and the model is told
that its shell state was reset.
"""

from __future__ import annotations

import shlex
import time

from cligym.errors import CligymError, EngineUnavailable
from cligym.runtime import Session

STATE_DIR = "/tmp/.cligym-agent"
SOCKET = f"{STATE_DIR}/tmux.sock"
PANE = "agent"
#: seconds a timed-out command gets after Ctrl-C before its shell is killed
GRACE = 5
#: Longer commands are copied into the container as a script instead of passed as argv.
MAX_INLINE = 64 * 1024
#: the pane's shell: no start-up files, no history file, tmux's own variables left out
SHELL = "unset TERM TMUX TMUX_PANE; HISTFILE= exec bash --noprofile --norc"
#: wait for a non-empty RC file ($1); exit 97 when the shell ($2) is gone (or a zombie)
#: first, 98 when the state directory was removed
WAIT = ('while [ ! -s "$1" ]; do read -r l < "/proc/$2/stat" 2>/dev/null || exit 97; r=${l##*) }; '
        f'[ "${{r%% *}}" = Z ] && exit 97; [ -d {STATE_DIR} ] || exit 98; sleep 0.05; done')
#: the exit code ($4) on the first line, then OUT ($1) cut to $2 bytes from each end ($3: the
#: limit); then OUT, RC and the command's script ($5) are removed
READ = ('head -n 1 "$4" 2>/dev/null || echo; n=$(wc -c < "$1" 2>/dev/null || echo 0); '
        'if [ "$n" -gt "$3" ]; then head -c "$2" "$1"; printf "\\n[... output cut: %s bytes omitted ...]\\n" '
        '$((n - 2 * $2)); tail -c "$2" "$1"; else cat "$1" 2>/dev/null; fi; rm -f "$1" "$4" "$5"')
#: kill every process of the session whose leader is $1 (the shell and all it started)
KILL_SESSION = ('for d in /proc/[0-9]*; do read -r l < "$d/stat" 2>/dev/null || continue; r=${l##*) }; '
                'set -- $r; [ "$4" = "$0" ] && kill -KILL "${d#/proc/}" 2>/dev/null; done; true')


class ShellUnavailable(Exception):
    """tmux cannot run in this container (any more)."""


def cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[-limit // 2 :]
    return f"{head}\n[... output cut: {len(text) - limit} characters omitted ...]\n{tail}"


def _observation(output: str, exit_code: int | None, note: str = "") -> str:
    lines = [output.rstrip("\n")] if output.strip() else []
    if exit_code:
        lines.append(f"[exit code {exit_code}]")
    return "\n".join([*lines, *([note] if note else [])])


class TmuxShell:
    """A persistent interactive bash in a tmux pane of the session's container."""

    def __init__(self, session: Session, workdir: str, max_output: int) -> None:
        self.session = session
        self.workdir = workdir
        self.max_output = max_output
        self.count = 0
        self.pid = 0  # the shell's
        self.server = 0  # the tmux server's
        #: why tmux cannot be used any more ("" while it can)
        self.broken = ""

    def tmux(self, *args: str, timeout: float = 60):
        return self.session.exec(["tmux", "-S", SOCKET, *args], timeout=timeout)

    def start(self) -> None:
        """Start the shell; ShellUnavailable when tmux cannot."""
        self.session.exec(["mkdir", "-p", STATE_DIR], timeout=60)
        started = self.tmux("new-session", "-d", "-s", PANE, "-x", "200", "-y", "50", "-c", self.workdir, SHELL)
        shown = self.tmux("display-message", "-p", "-t", PANE, "#{pane_pid} #{pid}") if started.ok else started
        pids = shown.output.split()
        if not shown.ok or len(pids) != 2 or not all(p.isdigit() for p in pids):
            raise ShellUnavailable((shown.output.strip().splitlines() or [f"tmux exit code {shown.exit_code}"])[-1])
        self.pid, self.server = int(pids[0]), int(pids[1])

    def reattach(self) -> None:
        """Make the state directory and the server's socket again (a command removed them):
        tmux makes its socket anew on SIGUSR1; the shell keeps its state."""
        self.session.exec(["sh", "-c", f"mkdir -p {STATE_DIR} && kill -USR1 {self.server}"], timeout=60)
        time.sleep(0.2)

    def run(self, command: str, seconds: int) -> str:
        """The observation for ``command``; ShellUnavailable (before it ran) when tmux
        cannot be used any more."""
        if self.broken:
            raise ShellUnavailable(self.broken)
        if not self.pid:
            self.start()
        self.count += 1
        base = f"{STATE_DIR}/{self.count}"
        script, out, rc = f"{base}.sh", f"{base}.out", f"{base}.rc"
        sent = self.send(script, command, f"source {script} > {out} 2>&1 < /dev/null; echo $? > {rc}")
        waited = self.session.exec(["sh", "-c", WAIT, "wait", rc, str(self.pid)], timeout=seconds)
        try:
            note = self.recover(waited, rc, seconds)
        except ShellUnavailable as exc:  # the command ran; later ones go to a fresh bash each
            self.broken = str(exc)
            note = f"[the shell could not be started again ({self.broken[:200]})]"
        note = "\n".join(n for n in (sent, note) if n)
        half = max(1, self.max_output // 2)
        read = self.session.exec(["sh", "-c", READ, "read", out, str(half), str(2 * half), rc, script], timeout=60)
        first, _, output = read.output.partition("\n")
        code = int(first) if first.strip().isdigit() and not note else None
        return _observation(output, code, note)

    def send(self, script: str, command: str, line: str) -> str:
        """Copy ``command`` in as ``script`` and type ``line``: "", or a note when the shell
        had to be started anew first (killed, or its files under /tmp removed). Raises
        ShellUnavailable (the command did not run) when even a new one cannot start."""
        put = {script: (command + "\n", 0o600)}
        for recover in (None, self.reattach):  # the shell may be fine, only its files gone
            try:
                if recover is not None:
                    recover()
                self.session.put_files(put)
                self.type(line)
                return ""
            except EngineUnavailable:
                raise
            except (ShellUnavailable, CligymError):
                pass
        self.restart()
        self.session.put_files(put)
        self.type(line)
        return (f"[the shell was gone (killed, or its files removed); a new one was started in {self.workdir}: "
                "shell variables, functions, background jobs and the working directory were reset]")

    def recover(self, waited, rc: str, seconds: int) -> str:
        """After waiting for a command: a note when it timed out, its shell exited or it
        removed the shell's files."""
        if waited.exit_code == 98:  # its RC file cannot be written: type one to learn when it ends
            self.reattach()
            self.type(f"echo removed > {rc}")
            waited = self.session.exec(["sh", "-c", WAIT, "wait", rc, str(self.pid)], timeout=seconds)
            if not waited.timed_out and waited.exit_code != 97:
                return "[the command removed the shell's own files under /tmp, so its output was lost]"
        if waited.timed_out:
            return self.interrupt(rc, seconds)
        if waited.exit_code == 97:
            self.restart()
            return (f"[the shell exited; a new one was started in {self.workdir}: shell variables, functions, "
                    "background jobs and the working directory were reset]")
        return ""

    def type(self, line: str) -> None:
        """Type ``line`` and Enter into the pane; ShellUnavailable when tmux no longer runs."""
        sent = self.tmux("send-keys", "-t", PANE, "-l", line, ";", "send-keys", "-t", PANE, "Enter")
        if not sent.ok:
            raise ShellUnavailable(sent.output.strip()[-300:] or f"tmux exit code {sent.exit_code}")

    def interrupt(self, rc: str, seconds: int) -> str:
        """Ctrl-C for a command past its timeout; the shell is started anew if it does not
        come back within GRACE seconds."""
        self.tmux("send-keys", "-t", PANE, "C-c")
        self.type(f"echo 130 > {rc}")  # read by the shell once it is back at its prompt
        waited = self.session.exec(["sh", "-c", WAIT, "wait", rc, str(self.pid)], timeout=GRACE)
        if waited.ok:
            return f"[command timed out after {seconds} s and was interrupted with Ctrl-C]"
        self.restart()
        return (f"[command timed out after {seconds} s and did not stop on Ctrl-C: it was killed with its shell, "
                f"and a new shell was started in {self.workdir} (shell variables, functions, background jobs "
                "and the working directory were reset)]")

    def stop(self) -> None:
        """Kill the shell with everything it started, and the tmux server."""
        if self.pid:
            self.session.exec(["sh", "-c", KILL_SESSION, str(self.pid)], timeout=60)
        self.tmux("kill-server")
        self.pid = 0

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        self.session.exec(["rm", "-rf", STATE_DIR], timeout=60)


class OneShotShell:
    """A fresh bash per command that keeps the working directory and exported variables
    (in files under STATE_DIR): the fallback where tmux cannot run (missing from the image,
    or broken by the task's own breakage)."""

    def __init__(self, session: Session, workdir: str, max_output: int) -> None:
        self.session = session
        self.workdir = workdir
        self.max_output = max_output

    def run(self, command: str, seconds: int) -> str:
        state = shlex.quote(STATE_DIR)
        script = (
            f"mkdir -p {state}; [ -f {state}/env ] && . {state}/env >/dev/null 2>&1; "
            f"cd \"$(cat {state}/cwd 2>/dev/null || echo {shlex.quote(self.workdir)})\" 2>/dev/null; "
            f"trap 'pwd > {state}/cwd; export -p > {state}/env' EXIT\n{command}\n"
        )
        if len(script.encode()) > MAX_INLINE:
            # one argument may not exceed the kernel's limit (128 KiB): long commands go as a file
            self.session.exec(["mkdir", "-p", STATE_DIR], timeout=60)
            self.session.put_files({f"{STATE_DIR}/command.sh": (script, 0o600)})
            result = self.session.exec(["bash", f"{STATE_DIR}/command.sh"], timeout=seconds)
        else:
            result = self.session.exec(["bash", "-c", script], timeout=seconds)
        output = cut(result.output, self.max_output)
        if result.timed_out:
            return _observation(output, None, f"[command timed out after {seconds} s and was killed]")
        return _observation(output, result.exit_code)

    def close(self) -> None:
        self.session.exec(["rm", "-rf", STATE_DIR], timeout=60)
