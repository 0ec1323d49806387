"""Records of the curate stage: what fired on a trajectory, each trajectory's decision,
and the summary of a curation."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class CheatHit(BaseModel):
    rule: str
    step_id: int
    tool: str
    command: str
    matched: str


class LoopHit(BaseModel):
    tool: str
    action: str
    repeats: int
    step_ids: list[int]


Decision = Literal["kept", "not_successful", "too_short", "cheating", "duplicate"]


class TrajectoryDecision(BaseModel):
    task_id: str
    attempt: int
    path: str
    reward: float | None
    agent_steps: int
    decision: Decision
    #: why, in one line ("" when kept): the reward, the step count, or the first cheating
    #: rule that fired with what it matched (tampering rules say so)
    reason: str = ""
    cheating: list[CheatHit] = Field(default_factory=list)
    loop: LoopHit | None = None


class CurationSummary(BaseModel):
    rollout_dir: str
    out_dir: str
    min_steps: int
    loop_repeat: int
    trajectories: int
    successful: int
    failed: int
    kept: int
    dropped: dict[str, int]  # by decision: not_successful, too_short, cheating, duplicate (with kept, sums
    # to trajectories); a duplicate repeats a kept attempt of the same task word for word
    cheating: dict[str, int]  # trajectories dropped as cheating, by rule (one trajectory may fire several)
    cheating_detected: dict[str, int]  # every trajectory, whatever its decision, by rule
    incomplete: list[str] = Field(default_factory=list)  # attempt folders missing one of the two records
    loops_failures: int
    loops_all: int
    loop_rate_failures: float | None
    loop_rate_all: float | None
    decisions: list[TrajectoryDecision] = Field(default_factory=list)
