"""``execute_bash`` as a persistent shell (tmux in the task container): what persists, what
a timeout, an ``exit`` or a broken tmux do, and that closing it leaves nothing behind."""

from __future__ import annotations

from cligym.agents.shell import STATE_DIR
from cligym.agents.tools import ToolExecutor

#: live (not zombie) processes of the container but its keep-alive PID 1, as "pid comm" lines
LIVE = ('for d in /proc/[0-9]*; do [ "$d" = /proc/1 ] && continue;  '
        'read -r l < "$d/stat" 2>/dev/null || continue; r=${l##*) }; '
        '[ "${r%% *}" = Z ] || echo "${d#/proc/} $(cat $d/comm)"; done')


def _bash(tools: ToolExecutor, command: str, timeout: int | None = None) -> str:
    return tools.run("execute_bash", {"command": command, **({"timeout": timeout} if timeout else {})})


def _live(session) -> list[str]:
    return [line.split(" ", 1)[1] for line in session.exec(["sh", "-c", LIVE], timeout=60).output.splitlines()]


def test_shell_state_persists_and_timeouts_interrupt(runtime, base_image):
    with runtime.session(base_image) as session:
        tools = ToolExecutor(session, workdir="/", command_timeout=30, max_output=400)
        assert _bash(tools, "cd /tmp; X=kept; greet() { echo hi $1; }; alias ll='ls -d'") == ""
        assert _bash(tools, "pwd; echo $X; greet you; type ll").splitlines() == [
            "/tmp", "kept", "hi you", "ll is aliased to `ls -d'"]
        _bash(tools, "sleep 300 &")
        assert "Running" in _bash(tools, "jobs") and "sleep 300" in _bash(tools, "jobs")
        assert _bash(tools, "false; echo $?; false") == "1\n[exit code 1]"
        assert _bash(tools, "read answer; echo got:$answer") == "got:"  # no input, no hang
        long = _bash(tools, "seq 1 100000")
        assert "output cut" in long and len(long) < 600 and long.endswith("100000")

        assert _bash(tools, "sleep 100; echo not-reached", timeout=2).endswith("interrupted with Ctrl-C]")
        assert _bash(tools, "echo $X; pwd") == "kept\n/tmp"  # the interrupt kept the shell

        deaf = _bash(tools, "trap '' INT; sleep 101", timeout=2)
        assert "did not stop on Ctrl-C" in deaf and "reset" in deaf
        assert _bash(tools, "echo [$X]; pwd") == "[]\n/"
        assert "sleep" not in _live(session)  # the deaf command and the old background job are gone

        _bash(tools, "cd /tmp; Y=1")
        assert "the shell exited" in _bash(tools, "exit 3")
        assert _bash(tools, "echo [$Y]; pwd") == "[]\n/"

        # a command that removes the shell's own files (its socket among them): the output is
        # lost, the shell and its state are not
        _bash(tools, "Z=still")
        assert "output was lost" in _bash(tools, "rm -rf /tmp/.[a-z]*; echo cleaned")
        assert _bash(tools, "echo $Z") == "still"
        _bash(tools, "rm /tmp/.cligym-agent/tmux.sock; W=w")  # only the server's socket
        assert _bash(tools, "echo $Z$W") == "stillw"
        assert "the shell exited" in _bash(tools, "kill -9 $$")
        assert _bash(tools, "echo [$Z]") == "[]"


def test_closing_the_shell_leaves_no_process_or_file(runtime, base_image):
    with runtime.session(base_image) as session:
        tools = ToolExecutor(session, workdir="/", command_timeout=30)
        _bash(tools, "sleep 300 & echo started")
        assert {"tmux: server", "bash", "sleep"} <= set(_live(session))
        tools.close()
        assert not {"tmux: server", "bash", "sleep"} & set(_live(session))
        assert session.exec(["test", "-e", STATE_DIR], timeout=60).exit_code == 1
        assert session.diff() == []  # no history file, no socket, no state left in the container


def test_without_tmux_commands_run_in_a_fresh_bash_each(runtime, base_image):
    with runtime.session(base_image) as session:
        session.exec(["rm", "/usr/bin/tmux"], timeout=60)
        tools = ToolExecutor(session, workdir="/", command_timeout=30)
        first = _bash(tools, "cd /tmp; export E=exported; V=plain")
        assert first.startswith("[note: no persistent shell") and "fresh bash" in first
        assert _bash(tools, "pwd; echo $E [$V]") == "/tmp\nexported []"


def test_tmux_broken_mid_run_runs_the_command_once_in_a_fresh_bash(runtime, base_image):
    with runtime.session(base_image) as session:
        tools = ToolExecutor(session, workdir="/", command_timeout=30)
        assert _bash(tools, "cd /tmp; export E=1; rm /usr/bin/tmux") == ""
        text = _bash(tools, "echo ran >> /tmp/count; cat /tmp/count")
        assert text.startswith("[note: no persistent shell") and text.endswith("\nran")
        tools.close()
