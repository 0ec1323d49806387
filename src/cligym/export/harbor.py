"""Harbor (Terminal-Bench 2.0) task directories.

Layout: task.toml, instruction.md, environment/Dockerfile (FROM the gold image, then ΔD),
tests/ (copied to /tests after the agent finishes): test.sh, executed directly in WORKDIR
under the busybox of tests/bin (its shebang), which restores gold's test files, checks gold's
fingerprint, runs the tests and writes /logs/verifier/reward.txt from the JUnit report, with
the gold reference in tests/reference (see ``cligym.harness.reference``); solution/solve.sh (the
oracle's repair). The task's tests and solution are never part of the image.
"""

from __future__ import annotations

from cligym.export.base import TaskDirExporter
from cligym.export.common import (
    difficulty,
    dockerfile,
    error_kinds,
    measured_metadata,
    necessary_operators,
    task_name,
    toml_document,
    write,
)
from cligym.harness.bundle import harbor_test_sh, write_reference
from cligym.harness.guard import compose_yaml, guarded_path, write_guard
from cligym.layout import TaskDir
from cligym.models.reference import GoldReference
from cligym.models.task import Task

AGENT_TIMEOUT = 1800.0
VERIFIER_TIMEOUT = 900.0
#: What the verifier cannot check and so trusts, by how the task is run (docs/threat-model.md says why).
TRUSTS_GUARDED = [
    "the kernel and the container engine",
    "a harness that honours environment/docker-compose.yaml (Harbor's docker environment): the guard folder"
    " mounted read-only at /cligym, /cligym/bin first on the container's PATH",
    "that the harness removes the reward files (rm -f -- /logs/verifier/...) before it uploads tests/, and starts"
    " the test script as `bash -c '(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1'` (Harbor >= 0.25)",
]
TRUSTS_UNGUARDED = [
    "the kernel and the container engine",
    "the image's bash, which starts test.sh (a harness without compose, or a PATH of ΔD's the guard cannot"
    " follow: the agent may have replaced it)",
    "that no process the agent left running acts between the agent's end and the verifier's first sweep"
    " (it may trace processes of its uid, PID 1 included, and rewrite /tests after the upload)",
]
BUILD_TIMEOUT = 600.0


def task_toml(task: Task, guarded: bool) -> str:
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
            "verifier_guard": "compose" if guarded else "none",
            "verifier_trusts": TRUSTS_GUARDED if guarded else TRUSTS_UNGUARDED,
        },
        verifier={"timeout_sec": VERIFIER_TIMEOUT},
        agent={"timeout_sec": AGENT_TIMEOUT},
        environment={
            "build_timeout_sec": BUILD_TIMEOUT,
            # a task whose repair needs the network is exported only on request, and marked so
            "network_mode": "no-network" if task.offline_fair else "public",
            "cpus": 1,
            "memory_mb": 2048,
        },
    )
    return toml_document({"version": "1.0"}, sections)


class HarborExporter(TaskDirExporter):
    name = "harbor"

    def write_task(self, task: Task, instruction: str, out: TaskDir, reference: GoldReference,
                   pristine: bytes) -> TaskDir:
        path = guarded_path(reference.path_env, task.dockerfile) if reference.path_env else None
        write(out.task_toml, task_toml(task, guarded=path is not None))
        write(out.instruction, instruction)
        write(out.dockerfile, dockerfile(task))
        write_reference(reference, pristine, out)
        write(out.test_sh, harbor_test_sh(), 0o755)
        write(out.solve_sh, task.solution, 0o755)
        if path is not None:  # the guard's sums are of tests/ as written above
            write_guard(out)
            write(out.harbor_compose, compose_yaml(out, path))
        return out
