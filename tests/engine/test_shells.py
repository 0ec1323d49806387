"""Every shell an agent can open in a gold image sees the environment the tests run with:
login and non-login, interactive and not, and the shells tmux starts (a harness's
``tmux new-session 'bash --login'``, tmux's default shell), each with gold's ``python`` and
the same PATH and variables as the image's own environment. A PATH or variable the container
is started with instead (a broken image's ``ENV``, a harness's folder put first) reaches
them as it reaches the tests: gold's values are not re-imposed over a fault."""

from __future__ import annotations

import re
import shlex

import pytest

from cligym.gold.image import PROFILE_SCRIPT
from tests.llm_server import ScriptedServer

from .test_curate_harbor_cli import answer
from .test_dataset_harbor_cli import _leftovers, harbor, harbor_run, submodule_task  # noqa: F401 (fixtures)

SPEC = "markupsafe==3.0.2"
#: What each shell runs: the python it finds and its exported variables, into a file that
#: appears whole (a tmux shell's output is read from it, not from the pane).
PROBE = ('{{ command -v python || echo "no python"; env; }} > /tmp/.probe-{0}.part '
         '&& mv /tmp/.probe-{0}.part /tmp/.probe-{0}')
#: The shells a command can start directly, by argv.
DIRECT = {
    "sh": ["sh", "-c"],
    "sh-l": ["sh", "-lc"],
    "bash": ["bash", "-c"],
    "bash-l": ["bash", "-lc"],
    "bash-i": ["bash", "-ic"],
    "bash-l-i": ["bash", "-l", "-i", "-c"],
}
#: The shells tmux starts: a harness's login bash (Harbor's terminus-2 starts exactly
#: this), and tmux's default shell (a login shell of the user's).
TMUX = {
    "tmux-bash-login": "tmux new-session -x 160 -y 40 -d -s agent 'bash --login'",
    "tmux-default": "tmux new-session -x 160 -y 40 -d -s plain",
}


def _parse(text: str) -> tuple[str, dict[str, str]]:
    first, *lines = text.splitlines()
    return first, dict(line.split("=", 1) for line in lines if "=" in line)


def probe_shells(session) -> dict[str, tuple[str, dict[str, str]]]:
    """What each kind of shell sees: (the python it finds, its exported variables). The
    Debian gold's test uses it too."""
    for name, shell in DIRECT.items():
        result = session.exec([*shell, PROBE.format(name)], timeout=60)
        assert result.ok, f"{name}: {result.output}"
    for name, start in TMUX.items():
        target = start.split(" -s ")[1].split()[0]
        assert session.exec(["bash", "-c", start], timeout=60).ok
        # typed into the shell as an agent types (literally, then Enter)
        assert session.exec(["tmux", "send-keys", "-t", target, "-l", PROBE.format(name)], timeout=60).ok
        assert session.exec(["tmux", "send-keys", "-t", target, "Enter"], timeout=60).ok
    waits = " ".join(f"/tmp/.probe-{name}" for name in TMUX)
    waited = session.exec(["sh", "-c", f"for i in $(seq 150); do ok=1; for f in {waits}; do [ -e $f ] || ok=; done; "
                                       "[ $ok ] && exit 0; sleep 0.2; done; exit 1"], timeout=60)
    assert waited.ok, "a tmux shell never ran the probe"
    seen = {}
    for name in [*DIRECT, *TMUX]:
        data = session.get_file(f"/tmp/.probe-{name}")
        assert data is not None, name
        seen[name] = _parse(data.decode())
    return seen


def image_env(runtime, image: str) -> dict[str, str]:
    """The image's own environment: what the tests run with."""
    return dict(e.split("=", 1) for e in runtime.image_config(image)["Env"])


def assert_every_shell_sees_the_image_env(runtime, image: str, python: str | None) -> None:
    """Each shell finds ``python`` (None: none at all) and has every variable of the image's
    environment at the image's value."""
    expected = image_env(runtime, image)
    with runtime.session(image) as session:
        assert session.exec(["test", "-f", PROFILE_SCRIPT], timeout=60).ok
        for name, (found, env) in probe_shells(session).items():
            assert found == (python or "no python"), f"{name} finds {found}, not {python}"
            assert {k: env.get(k) for k in expected} == expected, f"{name} sees another environment"


def assert_every_shell_follows_the_container(runtime, image: str) -> None:
    """A PATH and variables the container is started with, as a broken image's ``ENV PATH``
    and ``ENV PYTHONPATH`` set them (and the verifier's guard sets PATH), reach every shell:
    a login shell finds the shadowing ``python``, not gold's."""
    env = {"PATH": f"/opt/shadow:{image_env(runtime, image)['PATH']}", "PYTHONPATH": "/opt/shadow", "LANG": "C"}
    with runtime.session(image, env=env) as session:
        assert session.exec(["mkdir", "/opt/shadow"], timeout=60).ok
        session.put_files({"/opt/shadow/python": ("#!/bin/sh\necho shadow\n", 0o755)})
        for name, (found, got) in probe_shells(session).items():
            assert found == "/opt/shadow/python", f"{name} finds {found}"
            assert {k: got.get(k) for k in env} == env, f"{name}: {shlex.join(f'{k}={got.get(k)}' for k in env)}"


@pytest.fixture(scope="module")
def gold(gold_envs):
    return gold_envs(SPEC)


def test_every_shell_sees_golds_python_and_environment(runtime, gold):
    assert image_env(runtime, gold.image)["PATH"].startswith("/opt/venv/bin:")
    assert_every_shell_sees_the_image_env(runtime, gold.image, gold.python)
    with runtime.session(gold.image) as session:
        for shell in (["bash", "-lc"], ["sh", "-lc"]):
            version = session.exec([*shell, "python -m pytest --version"], workdir=gold.workdir, timeout=120)
            assert version.ok and "pytest" in version.output, f"{shell}: {version.output}"


def test_a_path_and_variables_the_container_is_started_with_reach_every_shell(runtime, gold):
    assert_every_shell_follows_the_container(runtime, gold.image)


@pytest.mark.slow
def test_harbors_terminus_shell_finds_golds_python(harbor, submodule_task, tmp_path):  # noqa: F811 - the fixtures
    """As a harness meets it: Harbor's terminus-2 types into the tmux ``bash --login`` it
    starts in an exported task's container (the verifier's guard first on PATH). What the
    shell prints comes back to the model: gold's ``python``, the container's PATH, a pytest
    (run outside the project: the task's breakage stops its conftest)."""
    keys = 'command -v python; echo "PATH is $PATH"; (cd /tmp && python -m pytest --version)\n'
    look = answer("Look at the shell.", [(keys, 10)])
    done = answer("Done.", [], complete=True)
    with ScriptedServer([look, done, done], models=("scripted",)) as server:
        try:
            harbor_run(harbor, submodule_task, "terminus-2", tmp_path / "jobs", concurrent=1,
                       options=("-m", "openai/scripted", "-k", "1", "--ak", f"api_base={server.base_url}",
                                "--ak", "record_terminal_session=false", "--ak", "max_turns=3"),
                       variables={"OPENAI_API_KEY": "none"})
        finally:
            assert _leftovers() == []
        requests = list(server.requests)
    screen = requests[1]["messages"][-1]["content"]
    assert re.search(r"^/opt/venv/bin/python$", screen, re.M), screen
    assert re.search(r"^PATH is /cligym/bin:/opt/venv/bin:", screen, re.M), screen
    assert re.search(r"^pytest \d", screen, re.M), screen
