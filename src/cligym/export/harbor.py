"""Harbor (Terminal-Bench 2.0) task directories.

Layout: task.toml, instruction.md, environment/Dockerfile (FROM the gold image, then ΔD),
tests/ (copied to /tests after the agent finishes): test.sh, executed directly in WORKDIR
under the busybox of tests/bin (its shebang), which restores gold's test files, checks gold's
fingerprint, runs the tests and writes /logs/verifier/reward.txt from the JUnit report, with
the gold reference in tests/reference (see ``cligym.harness.reference``); solution/solve.sh (the
oracle's repair). The task's tests and solution are never part of the image.
"""

from __future__ import annotations

import re

from cligym.export.base import TaskDirExporter
from cligym.export.common import (
    difficulty,
    dockerfile,
    error_kinds,
    measured_metadata,
    necessary_operators,
    network_mode,
    task_name,
    toml_document,
    write,
)
from cligym.harness.reference import harbor_test_sh, launcher_path, write_reference
from cligym.layout import TaskDir
from cligym.models.reference import GoldReference
from cligym.models.task import TaskInstance

AGENT_TIMEOUT = 1800.0
VERIFIER_TIMEOUT = 900.0
#: What the verifier cannot check and so trusts (docs/threat-model.md says why).
VERIFIER_TRUSTS = [
    "the kernel and the container engine",
    "the harness's PATH: Harbor starts test.sh, and chmod +x before it, with `bash -c`; [environment] env puts the"
    " task's own tests/bin/bash first (where ΔD sets a PATH of its own, the image's bash is trusted instead)",
    "that no process the agent left running (PID 1 included, which no signal from inside the container reaches)"
    " rewrites /tests between its upload and test.sh's start; test.sh then stops every other process",
]
BUILD_TIMEOUT = 600.0


def sets_path(task: TaskInstance) -> bool:
    """Whether ΔD gives the image a PATH of its own (then gold's cannot stand in for it)."""
    return any(re.match(r"\s*ENV\s+(?:.*\s)?PATH[=\s]", line) for line in task.dockerfile)


def task_toml(task: TaskInstance, reference: GoldReference) -> str:
    # the sections of Harbor's TaskConfig, in its order
    sections = dict(
        task={
            "name": task_name(task),
            "description": f"Repair the environment of {task.repo} so its failing tests pass again.",
            "keywords": ["environment-repair", *task.categories],
        },
        metadata={
            "author_name": "cligym",
            "difficulty": difficulty(task),
            **measured_metadata(task),
            "category": task.category,
            "tags": ["environment-repair", *task.categories, *task.operators],
            "operators": list(task.operators),
            "source_project": task.repo,
            "gold_image": task.image_name,
            "instance_id": task.instance_id,
            "fail_to_pass": len(task.FAIL_TO_PASS),
            "pass_to_pass": len(task.PASS_TO_PASS),
            "necessary_operators": necessary_operators(task),
            "error_kinds": error_kinds(task),
            "offline_fair": bool(task.offline_fair),
            "verifier_trusts": VERIFIER_TRUSTS,
        },
        verifier={"timeout_sec": VERIFIER_TIMEOUT},
        agent={"timeout_sec": AGENT_TIMEOUT},
        environment={
            "build_timeout_sec": BUILD_TIMEOUT,
            "network_mode": network_mode(task),
            "cpus": 1,
            "memory_mb": 2048,
            # Harbor starts the verifier with `bash -c`: let that find the task's own launcher
            **({} if sets_path(task) or not reference.path_env else {"env": {"PATH": launcher_path(reference)}}),
        },
    )
    return toml_document({"version": "1.0"}, sections)


class HarborExporter(TaskDirExporter):
    name = "harbor"

    def write_task(self, task: TaskInstance, instruction: str, out: TaskDir, reference: GoldReference,
                   pristine: bytes) -> TaskDir:
        write(out.task_toml, task_toml(task, reference))
        write(out.instruction, instruction)
        write(out.harbor_dockerfile, dockerfile(task))
        write_reference(reference, pristine, out)
        write(out.test_sh, harbor_test_sh(), 0o755)
        write(out.solve_sh, task.solution, 0o755)
        return out
