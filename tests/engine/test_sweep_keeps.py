"""The sweeper's answer known before a sweep, on a real gold image: a line of pip's
configuration that gold lacks and that no sweep removes (a PIP_ variable of the
container, a setting in a machine-wide file that only a write to its own path changes)
means the sweep cannot solve the state; the sweep then does not run. Where the file has
another name, a link on its way, lies in the venv or is named by an install record, the
sweep runs, and it does remove such a line where it can."""

from __future__ import annotations

import uuid

import pytest

from cligym.harness.images import build_broken, run_script
from cligym.harness.bundle import script
from cligym.harness.reference import gold_pip_config, pip_config
from cligym.verify import difficulty
from cligym.verify.difficulty import sweep_keeps

PROJECT = "markupsafe==3.0.2"
SETTING = "printf '\\n[install]\\nno-deps = true\\n' >> "
SITE = "/opt/venv/lib/python3.11/site-packages"


@pytest.fixture(scope="module")
def gold(gold_envs):
    return gold_envs(PROJECT)


def _keeps(runtime, gold, tamper: str = "", env: dict[str, str] | None = None,
           sweep: bool = False) -> tuple[bool, bool | None]:
    """In a gold container with ``tamper`` run (and ``env``): whether ``sweep_keeps`` says
    the sweep leaves pip's configuration not gold's, and (when it says so, or ``sweep``)
    whether it does after a real sweep."""
    prefix, want = gold_pip_config(runtime, gold.image, gold.python)
    with runtime.session(gold.image, env=env) as session:
        if tamper:
            assert session.exec(["sh", "-c", tamper]).ok
        said = sweep_keeps(session, prefix, want)
        if not (said or sweep):
            return said, None
        run_script(session, script("sweeper.sh"))
        return said, tuple(pip_config(session, prefix)) != want


@pytest.mark.parametrize(("tamper", "env", "known"), [
    ("", None, False),  # gold's configuration: nothing known
    (SETTING + "/etc/pip.conf", None, True),
    ("mkdir -p /etc/xdg/pip && " + SETTING + "/etc/xdg/pip/pip.conf", None, True),
    ("", {"PIP_NO_DEPS": "1"}, True),
    (SETTING + "/etc/pip.conf && ln /etc/pip.conf /root/second-name", None, False),  # a hard link
    ("mkdir -p /srv/cfg && " + SETTING + "/srv/cfg/pip.conf && mkdir -p /etc/xdg && ln -s /srv/cfg /etc/xdg/pip",
     None, False),  # a link on the way
    (SETTING + f"/etc/pip.conf && echo ../../../../etc/pip.conf,, >> {SITE}/pytest-8.3.3.dist-info/RECORD",
     None, False),  # an install record names it
])
def test_a_line_no_sweep_removes_is_known_before_the_sweep(runtime, gold, tamper, env, known):
    said, after = _keeps(runtime, gold, tamper, env)
    assert said is known
    assert after is (True if said else None)  # what was said holds: the sweep left it not gold's


def test_a_setting_in_the_venv_is_not_known_and_the_sweep_removes_it(runtime, gold):
    said, after = _keeps(runtime, gold, SETTING + "/opt/venv/pip.conf", sweep=True)
    assert not said and after is False


def test_a_state_whose_configuration_the_sweep_keeps_is_not_swept_and_no_sweep_runs(runtime, gold, monkeypatch):
    tag = f"cligym/test-sweep-keeps:{uuid.uuid4().hex[:8]}"
    build_broken(runtime, gold, [f"RUN {SETTING}/etc/pip.conf"], tag)
    try:
        def no_sweep(*args, **kwargs):
            raise AssertionError("the sweep ran")
        monkeypatch.setattr(difficulty, "run_script", no_sweep)
        assert not difficulty.sweeper_solves(runtime, gold, tag, [gold.tests[0]])
    finally:
        runtime.remove_image(tag)
