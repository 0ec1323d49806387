"""Incident scenarios as plans (no engine): what each one proposes from a real probe, the
repair scripts made of steps, and the difficulty label's rule."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from cligym.harness.repair import repair_script
from cligym.invert.operators import GoldFiles
from cligym.invert.scenarios import REGISTRY, Site
from cligym.invert.scenarios.base import missing_code, removable_functions
from cligym.models.probe import Probe
from cligym.models.task import Difficulty, RepairStep

#: The probe of python-dotenv 1.0.1's gold environment, cut to the files scenarios read.
PROBE = Path(__file__).parents[1] / "data" / "probe-dotenv-1.0.1.json"
DEBIAN_HOOK = (b"try:\n    import apport_python_hook\nexcept ImportError:\n    pass\n"
               b"else:\n    apport_python_hook.install()\n")
GOLD = {"/etc/pip.conf": b"[global]\nno-index = true\nfind-links = /opt/wheelhouse\n",
        "/etc/python3.11/sitecustomize.py": DEBIAN_HOOK, "/usr/lib/python3.11/sitecustomize.py": DEBIAN_HOOK}


@pytest.fixture(scope="module")
def site() -> Site:
    probe = Probe.model_validate_json(PROBE.read_text())
    return Site(probe, probe.tests, GoldFiles(GOLD.get))


def test_there_are_at_least_twelve_scenarios_each_citing_its_incident():
    assert len(REGISTRY) >= 12
    for scenario in REGISTRY.values():
        assert scenario.incident and len((type(scenario).__doc__ or "").split()) >= 15, scenario.name


def test_every_plan_is_two_to_four_changes_with_a_repair_step_each(site):
    planned = {}
    for name, scenario in sorted(REGISTRY.items()):
        plan = scenario.plan(site, random.Random(7))
        if plan is None:
            continue
        planned[name] = plan
        assert 2 <= len(plan.changes) <= 4, name
        assert sorted(plan.repair_order) == list(range(len(plan.changes))), name
        assert any(c.role == "fault" for c in plan.changes), name
        assert plan.touching and set(plan.touching) <= set(site.tests), name
        for change in plan.changes:
            assert change.dockerfile and change.repair and change.places and change.offline, (name, change.name)
            assert all(line.startswith(("RUN ", "ENV ")) for line in change.dockerfile), (name, change.name)
        if any(c.role == "blocker" for c in plan.changes):
            assert plan.naive, f"{name}: a blocker needs the naive repair it blocks"
    # the site (one narrow submodule, Debian's hook, a wheelhouse) fits most of them
    assert len(planned) >= 10, sorted(set(REGISTRY) - set(planned))


def test_plans_are_seeded(site):
    for scenario in REGISTRY.values():
        one, two = scenario.plan(site, random.Random(3)), scenario.plan(site, random.Random(3))
        assert (one and one.model_dump()) == (two and two.model_dump()), scenario.name


def test_a_scenario_without_its_landmark_plans_nothing(site):
    """No Debian hook: no distro-hook scenario; a pip.conf with a constraint: no second one."""
    bare = Site(site.probe, site.tests, GoldFiles({"/etc/pip.conf": b"[global]\nconstraint = /x\n"}.get))
    assert REGISTRY["distro_hook_shadow"].plan(bare, random.Random(1)) is None
    assert REGISTRY["constraint_pins_missing_release"].plan(bare, random.Random(1)) is None
    assert REGISTRY["self_undoing_fix"].plan(bare, random.Random(1)) is None
    redirected = Site(site.probe, site.tests, GoldFiles({"/etc/pip.conf": b"[install]\ntarget = /x\n"}.get))
    assert REGISTRY["build_stage_pip_target"].plan(redirected, random.Random(1)) is None
    assert REGISTRY["system_pip_user_install"].plan(redirected, random.Random(1)) is None


def run_sh(script: str, tmp_path: Path) -> str:
    path = tmp_path / "repair.sh"
    path.write_text(script)
    return subprocess.run(["sh", str(path)], capture_output=True, text=True, check=False).stdout


def test_a_repair_script_runs_its_steps_in_order_and_can_leave_one_out(tmp_path):
    steps = [RepairStep(label=f"s{i}", lines=[f"echo step{i}"]) for i in range(3)]
    assert run_sh(repair_script(steps), tmp_path).split() == ["step0", "step1", "step2"]
    assert run_sh(repair_script(steps, skip=1), tmp_path).split() == ["step0", "step2"]
    assert run_sh(repair_script(steps[:1]), tmp_path).split() == ["step0"]


def test_a_failed_step_is_tried_again_after_the_others(tmp_path):
    flag = tmp_path / "flag"
    steps = [RepairStep(label="needs flag", lines=[f"test -f {flag}", "echo first"]),
             RepairStep(label="makes flag", lines=[f"touch {flag}", "echo second"])]
    assert run_sh(repair_script(steps), tmp_path).split() == ["second", "first"]


@pytest.mark.parametrize("measures, label", [
    ((1, 1, True, True, 1, 1), "easy"),  # one fault the traceback names, the sweeper fixes it
    ((1, 2, False, True, 1, 1), "easy"),  # hidden, but one fault the sweeper fixes
    ((1, 2, False, False, 1, 1), "medium"),  # hidden and the sweeper fails
    ((2, 1, True, True, 2, 2), "medium"),  # a chain on two subsystems the sweeper fixes
    ((3, 4, True, True, 3, 2), "medium"),  # the sweeper solves it: never hard
    ((2, 3, True, False, 2, 2), "hard"),
    ((2, 3, False, False, 2, 1), "hard"),
])
def test_the_label_rule(measures, label):
    assert Difficulty.grade(*measures) == label


MODULE = b'''"""A module."""
import functools

__all__ = ["exported"]


def exported():
    return 1


def decorator(f):
    return f


@decorator
def decorated():
    return used_inside()


def used_inside():
    return 2


def reexported():
    return 3


@functools.lru_cache
def unused(x):
    """Called by nothing at import time."""
    return x * 2


class Thing:
    handler = decorated

    def method(self):
        return used_inside()

    def __repr__(self):
        return "Thing"


class Lone:
    def only(self):
        return 4
'''


def test_removable_functions_are_the_ones_no_import_needs():
    found = removable_functions(MODULE, b"from .mod import reexported\n")
    lines = MODULE.decode().splitlines()
    # used_inside is called only from a function's body: deleting it breaks callers, not the import
    assert [f[0] for f in found] == ["used_inside", "unused", "Thing.method"]
    name, first, last = found[1]
    assert lines[first - 1] == "@functools.lru_cache" and lines[last - 1] == "    return x * 2"
    # named in the package's __init__: not removable; a broken module offers nothing
    assert [f[0] for f in removable_functions(MODULE, b"from .mod import reexported, unused, method\n")] == \
        ["used_inside"]
    assert removable_functions(b"def broken(:\n", b"") == []


def test_a_module_usually_loses_one_function_and_still_imports(site, tmp_path):
    sub = site.submodules()[0]
    path = tmp_path / "mod.py"
    path.write_bytes(MODULE)
    files = GoldFiles({sub.path: MODULE, f"{sub.package}/__init__.py": b"from .mod import reexported\n"}.get)
    rich = Site(site.probe, site.tests, files)
    changes = [missing_code(rich, sub, random.Random(seed)) for seed in range(40)]
    names = [c.name for c in changes]
    assert {"function_removed", "module_removed"} == set(names) and names.count("function_removed") > 20
    narrow = next(c for c in changes if c.name == "function_removed")
    sed = narrow.dockerfile[0].removeprefix("RUN ").split(" && ")[0].replace(repr(sub.path)[1:-1], str(path))
    subprocess.run(["sh", "-c", sed.replace(f"'{path}'", str(path))], check=True)
    left = path.read_text()
    compile(left, "mod.py", "exec")
    gone = [f for f in ("def used_inside", "def unused", "def method") if f not in left]
    assert len(gone) == 1 and ("lru_cache" in left) == (gone != ["def unused"])
    assert "def reexported" in left and "def only" in left
    assert "handler = decorated" in left
    assert narrow.repair == [sub.reinstall]
    # a module that offers no removable function is deleted whole
    assert all(missing_code(site, sub, random.Random(seed)).name == "module_removed" for seed in range(5))
    # a degrader whose narrow plans kept missing asks for whole modules
    rich.narrow = False
    assert {missing_code(rich, sub, random.Random(seed)).name for seed in range(10)} == {"module_removed"}


STDLIB_MODULE = (b"import sys\n\n\ndef _helper(text):\n    return text\n\n\n"
                 b"def dedent(text):\n    return _helper(text)\n")


def test_a_stale_stdlib_backport_is_put_first_twice_over_a_module_the_project_imports(site):
    """The project's code imports a pure-Python standard-library module: an old copy of it
    (a helper gone) goes into two folders, one put first by Debian's hook, one by a .pth."""
    probe = site.probe.model_copy(deep=True)
    probe.modules["textwrap"] = "/usr/lib/python3.11/textwrap.py"
    gold = {**GOLD, "/opt/venv/lib/python3.11/site-packages/dotenv/main.py": b"import os\nimport textwrap\n",
            "/usr/lib/python3.11/textwrap.py": STDLIB_MODULE}
    plan = REGISTRY["stdlib_backport_twice"].plan(Site(probe, probe.tests, GoldFiles(gold.get)), random.Random(1))
    assert plan is not None and [c.name for c in plan.changes] == ["stdlib_backport_pth", "stdlib_backport_hook"]
    pth, hook = plan.changes
    for change, first in ((pth, "/opt/venv/lib/python3.11/site-packages/backports-compat.pth"),
                          (hook, "/usr/lib/python3.11/apport_python_hook.py")):
        (line,) = change.dockerfile
        assert "cp -a /usr/lib/python3.11/textwrap.py " in line and first in line and change.places[0] == first
        assert change.repair == [f"rm -rf {first} {change.places[1]}"]
        assert change.places[2] == f"{change.places[1]}/textwrap.py"  # the copy: tasks over other modules differ
    deleted = {line.split("sed -i '")[1].split("d'")[0] for line in (*pth.dockerfile, *hook.dockerfile)}
    assert deleted in ({"4,5"}, {"8,9"})  # the same helper gone from both copies
    assert plan.repair_order == [1, 0]  # the hook's copy is found first: its repair reveals the other


def test_no_stdlib_backport_without_a_pure_python_module_the_project_imports(site):
    assert REGISTRY["stdlib_backport_twice"].plan(site, random.Random(1)) is None
