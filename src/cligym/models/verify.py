"""The verification of a broken state: does it hold as a task (reproducible, non-trivial,
leak-free, solvable), and if not, why."""

from __future__ import annotations

from pydantic import BaseModel, Field

from cligym.models.fs import Finding
from cligym.models.timing import PhaseSeconds


class Verification(BaseModel):
    ok: bool
    kind: str | None = None  # the discard kind when not ok
    reason: str = ""
    leaks: list[Finding] = Field(default_factory=list)
    changed_paths: list[str] = Field(default_factory=list)  # added, changed or deleted by ΔD
    solution: str = ""  # the solution that was checked (derived ones included)
    still_failing: list[str] = Field(default_factory=list)  # not_solvable: the tests failing after the solution
    refused: list[str] = Field(default_factory=list)  # why the repairs tried before ``solution`` failed
    seconds: PhaseSeconds = Field(default_factory=PhaseSeconds)


class TaskCheck(BaseModel):
    """One task of a run re-checked from scratch by ``cligym verify``."""

    instance_id: str
    ok: bool
    kind: str | None = None
    reason: str = ""


class VerifyReport(BaseModel):
    """What ``cligym verify`` found for every task of a run (RUN_DIR/verify.json)."""

    run_dir: str
    gold_dir: str
    checked: int
    ok: int
    tasks: list[TaskCheck] = Field(default_factory=list)
