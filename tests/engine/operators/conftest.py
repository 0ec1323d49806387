"""The per-operator check: apply to a real gold image, see a test fail, repair, see it pass.

``probed(project)`` gives (gold, probe) of a real project, made once per session: a PyPI
spec (``h11==0.16.0``) or one of the local fixture projects in ``projects.LOCAL``.
``check_operator`` applies one operator to the first usable targets and asserts the break
and the repair; the table in ``test_table.py`` drives it.

The repair runs as an exported task's would, offline: ``repair_and_test`` runs the solution
script and then the tests in one container of the broken image, and every container the
runtime creates has ``network_mode="none"``. A solution that needed the network (an index
to download from) fails here; one that needs only what is in the image passes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from cligym.harness.images import build_broken, repair_and_test
from cligym.harness.probe import load_or_probe
from cligym.harness.testrun import run_tests
from cligym.invert.operators import (
    REGISTRY,
    GoldFiles,
    Operator,
    Target,
    solution_script,
)
from cligym.models.gold import GoldEnv
from cligym.models.probe import Probe

from .projects import LOCAL


@pytest.fixture(scope="session")
def probed(tmp_path_factory, runtime, base_image, gold_envs, gold_dirs):
    """(gold, probe) for a real project, built and probed once per session."""
    from cligym.gold import make_gold

    made: dict[str, tuple[GoldEnv, Probe]] = {}

    def get(project: str) -> tuple[GoldEnv, Probe]:
        if project not in made:
            if project in LOCAL:
                out = tmp_path_factory.mktemp(f"gold-{project}")
                gold = make_gold(str(LOCAL[project](tmp_path_factory)), out, runtime=runtime)
                made[project] = (gold, load_or_probe(runtime, gold, out))
            else:
                gold = gold_envs(project)  # its probe was made with it
                made[project] = (gold, load_or_probe(runtime, gold, gold_dirs(project)))
        return made[project]

    return get


@dataclass
class Broken:
    """What ``check_operator`` found: the target used, the tests it broke, the ΔD lines and
    the solution script, with the gold and probe they were made from."""

    target: Target
    failing: list[str]
    lines: list[str]
    solution: str
    selected: list[str]
    gold: GoldEnv
    probe: Probe


def check_model(op: Operator, target: Target) -> None:
    """A target carries its operator's typed data, survives JSON, and fills its texts."""
    assert isinstance(target.data, op.Data), f"{op.name}: data is {type(target.data).__name__}, not {op.Data.__name__}"
    assert op.Data.model_validate_json(target.data.model_dump_json()) == target.data
    assert json.loads(target.model_dump_json())["data"] == target.data.model_dump(mode="json")


def check_solution(op: Operator, target: Target) -> list[str]:
    """The operator's solution is bare shell lines: no shebang, no ``set -e``."""
    lines = op.solution(target)
    assert isinstance(lines, list) and lines and all(isinstance(line, str) and line for line in lines)
    assert not any("\n" in line or line.startswith("#!") or line.strip() == "set -e" for line in lines), lines
    return lines


def _screened_out(runtime, gold: GoldEnv, tag: str, target: Target, *, more: bool) -> bool:
    """Whether a target can be passed over after running only the few tests that touch it:
    none of them failed, and another target is left to try. (The whole suite then runs only
    for a target that breaks something; a few tests are no saving when most touch it.)"""
    known = set(gold.tests)
    few = [t for t in target.touching if t in known]
    if not more or not few or len(few) * 4 > len(gold.tests):
        return False
    return not run_tests(runtime, tag, gold.workdir, gold.test_command, few, timeout=600).failing(few)


def check_operator(
    runtime, gold: GoldEnv, probe: Probe, name: str, *, tries: int = 4,
    target_filter: Callable[[Target], bool] | None = None,
) -> Broken:
    """Apply operator ``name`` to its first usable target; assert the break and the repair."""
    op: Operator = REGISTRY[name]
    targets = op.applies_to(probe, list(gold.tests))
    if target_filter:
        targets = [t for t in targets if target_filter(t)]
    assert targets, f"{name}: no target in {gold.source.spec}"
    for target in targets:
        assert isinstance(target.data, op.Data)
    with runtime.session(gold.image) as session:
        files = GoldFiles.of_session(session)
        prepared = [p for p in (op.prepare(t, files) for t in targets[: tries * 3]) if p is not None]
    assert prepared, f"{name}: no target could be prepared"
    last = None
    for target in prepared[:tries]:
        check_model(op, target)
        check_solution(op, target)
        described = op.describe(target)
        assert "{" not in described["symptom"] + described["hint"], described
        lines = op.apply(target)
        tag = f"cligym/test-op-{name.replace('_', '-')}:{uuid.uuid4().hex[:8]}"
        try:
            build_broken(runtime, gold, lines, tag)
            selected = target.touching or list(gold.tests)
            if _screened_out(runtime, gold, tag, target, more=target is not prepared[:tries][-1]):
                last = f"none of the tests touching target {target.key} failed"
                continue
            broken = run_tests(runtime, tag, gold.workdir, gold.test_command, gold.tests, timeout=600)
            failing = sorted(broken.not_passed())
            if not failing:
                last = f"nothing failed for target {target.key}"
                continue
            script = solution_script([(op, target)])
            code, output, repaired = repair_and_test(runtime, tag, gold, script, list(gold.tests))
            assert code == 0, f"{name}: solution failed: {output[-500:]}"
            assert repaired.passed() == set(gold.tests), (
                f"{name}: still failing after repair: {sorted(repaired.not_passed())[:5]}"
            )
            return Broken(target, failing, lines, script, selected, gold, probe)
        finally:
            runtime.remove_image(tag)
    pytest.fail(f"{name}: no target broke a test ({last})")
