"""Terminal-Bench 1.0 task directories.

Layout: task.yaml, Dockerfile (build context: the task dir), docker-compose.yaml (service
``client``, image and container name from the T_BENCH_* variables, ``sleep infinity``, the
log volumes), run-tests.sh, solution.sh, tests/ (copied to $TEST_DIR by the harness).

The harness runs run-tests.sh with the image's bash; it hands over at once to the verifier
in tests/verifier.sh under the bundled busybox, the same one Harbor's test.sh is (see
``cligym.harness.reference``). Terminal-Bench 1.0 judges from pytest's -rA summary and the
exit status, so the verifier prints a ``FAILED`` line for every listed test that did not
pass (all of them when gold's files were changed) and exits non-zero.
"""

from __future__ import annotations

import json

from cligym.export.base import TaskDirExporter
from cligym.export.common import difficulty, dockerfile, write
from cligym.harness.bundle import tb_run_tests, write_reference
from cligym.layout import TaskDir
from cligym.models.reference import GoldReference
from cligym.models.task import Task, run_order

#: Where the verifier keeps its logs in a Terminal-Bench container (the harness reads the
#: terminal, not these).
TB_LOGS = "/tmp/cligym-verifier"

COMPOSE = """\
services:
  client:
    build:
      context: .
      dockerfile: Dockerfile
    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
    container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}
    command: [ "sh", "-c", "sleep infinity" ]
    environment:
      - TEST_DIR=${T_BENCH_TEST_DIR}
    volumes:
      - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}
      - ${T_BENCH_TASK_AGENT_LOGS_PATH}:${T_BENCH_CONTAINER_AGENT_LOGS_PATH}
"""


def task_yaml(task: Task, instruction: str) -> str:
    fields = {
        "instruction": instruction,
        "author_name": "cligym",
        "author_email": "unknown",
        "difficulty": difficulty(task),
        "category": task.category,
        "tags": ["environment-repair", *task.categories, *task.operators,
                 "offline-fair" if task.offline_fair else "needs-network"],
        "parser_name": "pytest",
        "max_agent_timeout_sec": 1800,
        "max_test_timeout_sec": 900,
        "run_tests_in_same_shell": False,
        "disable_asciinema": True,
    }
    # JSON scalars and flow sequences are valid YAML; this keeps the file exact
    return "".join(f"{k}: {json.dumps(v, ensure_ascii=False)}\n" for k, v in fields.items())


class TbExporter(TaskDirExporter):
    name = "tb"

    def write_task(self, task: Task, instruction: str, out: TaskDir, reference: GoldReference,
                   pristine: bytes) -> TaskDir:
        write(out.task_yaml, task_yaml(task, instruction))
        write(out.dockerfile, dockerfile(task))
        write(out.compose, COMPOSE)
        write_reference(reference, pristine, out)
        write(out.run_tests_sh, tb_run_tests(TB_LOGS), 0o755)
        write(out.solution_sh, task.solution, 0o755)
        write(out.selected_tests, "\n".join(run_order(task)) + "\n")
        return out
