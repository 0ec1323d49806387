"""Records of the invert stage: every attempt (Candidate), every verified task
(TaskInstance), and the run's summary."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from cligym import __version__

DiscardKind = Literal[
    "no_target", "build_failed", "no_failure", "not_reproducible", "trivial", "leak",
    "not_solvable", "duplicate", "error",
]


class AppliedOperator(BaseModel):
    name: str
    category: str
    target: str
    symptom: str
    hint: str


class Candidate(BaseModel):
    id: str
    attempt: int
    seed: int
    status: Literal["verified", "discarded"]
    discard_kind: DiscardKind | None = None
    reason: str = ""
    operators: list[AppliedOperator] = Field(default_factory=list)
    dockerfile: list[str] = Field(default_factory=list)
    solution: str = ""
    sample: list[str] = Field(default_factory=list)
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    fail_fraction: float = 0.0
    instance_id: str | None = None
    extra_bytes: int | None = None
    seconds: dict[str, float] = Field(default_factory=dict)


class TaskInstance(BaseModel):
    schema_version: int = 1
    cligym_version: str = __version__
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    instance_id: str
    repo: str  # the gold source, e.g. "markupsafe==3.0.2"
    image_name: str  # the gold image the ΔD lines build FROM
    gold_image_id: str
    workdir: str
    test_command: str
    dockerfile: list[str]  # ΔD: the lines that follow FROM
    operators: list[str]
    category: str
    categories: list[str]
    targets: list[str]
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    selected_tests: list[str] = Field(default_factory=list)  # F2P + P2P in the order they run
    solution: str
    changed_paths: list[str] = Field(default_factory=list)  # what ΔD added, changed or deleted
    errors: dict[str, str] = Field(default_factory=dict)  # F2P test -> error excerpt
    symptoms: list[str] = Field(default_factory=list)
    hints: list[str] = Field(default_factory=list)
    fail_fraction: float
    suite_size: int
    extra_bytes: int | None = None
    seed: int
    attempt: int


def run_order(task: TaskInstance) -> list[str]:
    """F2P + P2P in the order the suite runs them (sorted for records that lack it)."""
    selected = set(task.FAIL_TO_PASS) | set(task.PASS_TO_PASS)
    if task.selected_tests and set(task.selected_tests) == selected:
        return list(task.selected_tests)
    return sorted(selected)


class InvertConfig(BaseModel):
    """The arguments a run directory was made with; a resumed run must match them."""

    gold_image_id: str
    seed: int
    operators: list[str]
    sample_size: int
    max_operators: int


class Summary(BaseModel):
    attempts: int
    verified: int
    discarded: int
    yield_: float = Field(alias="yield")
    discard_reasons: dict[str, int]
    per_category: dict[str, int]
    per_operator: dict[str, int]
    stage_seconds: dict[str, float]
    seconds_per_verified: float | None
    mean_fail_fraction: float | None
    mean_extra_bytes: float | None
    selected_tests_seconds: float  # the mean gold runtime of a sample (for the cost ratio)

    model_config = {"populate_by_name": True}
