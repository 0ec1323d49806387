"""The export record: what one export wrote, and where."""

from __future__ import annotations

from pydantic import BaseModel, Field

from cligym.models.task import Difficulty, Label


class ExportReport(BaseModel):
    format: str
    hint: bool
    style: str
    tasks: list[str] = Field(default_factory=list)
    output: str
    gold_images: list[str] = Field(default_factory=list)
    #: tasks of the run not exported, with why (e.g. not offline-fair under --offline-only)
    left_out: dict[str, str] = Field(default_factory=dict)
    offline_only: bool = False
    #: --min-difficulty: the easiest measured label exported (None: no difficulty filter)
    min_difficulty: Label | None = None
    #: tasks that filter left out (each also in ``left_out``), and how many of them carry
    #: no measured difficulty
    below_min_difficulty: int = 0
    unmeasured_left_out: int = 0
    #: --registry: where the tasks' gold images are, and each as the tasks build FROM it
    #: (``REGISTRY/repository@sha256:…``); None and empty for a local export
    registry: str | None = None
    gold_pinned: dict[str, str] = Field(default_factory=dict)
    #: --task-images: each Harbor task's own image as task.toml's docker_image names it
    task_images: dict[str, str] = Field(default_factory=dict)
    #: the jsonl format's Hub-loadable twin of tasks.jsonl: the same rows as Parquet, and the
    #: dataset card naming it (None: not written, as by the task-directory formats)
    parquet: str | None = None
    card: str | None = None


class TaskRow(BaseModel):
    """One task as a row of ``tasks.jsonl`` (SWE-smith's style: loadable with the datasets
    library's json loader)."""

    instance_id: str
    repo: str
    image_name: str
    dockerfile: str  # ΔD, one line per line
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    problem_statement: str
    problem_statement_hint: str
    category: str
    operators: list[str]
    solution: str
    test_command: str
    workdir: str
    offline_fair: bool | None = None
    difficulty: Difficulty | None = None
    scenario: str = ""
