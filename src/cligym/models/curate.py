"""Records of the curate stage: what fired on a trajectory, each trajectory's decision,
and the summary of a curation; and the parts of Harbor's trial records curation reads."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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

#: what ``cligym curate`` read: a ``cligym rollout`` directory, or a Harbor job directory
#: (``harbor run``'s JOBS/<job>)
Source = Literal["rollout", "harbor_job"]


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
    rollout_dir: str  # the directory read (a rollout dir or a Harbor job dir: ``source`` says which)
    source: Source = "rollout"
    out_dir: str
    min_steps: int
    loop_repeat: int
    trials: int = 0  # every attempt (or Harbor trial) folder found, read or not
    trajectories: int
    successful: int
    failed: int
    kept: int
    dropped: dict[str, int]  # by decision: not_successful, too_short, cheating, duplicate (with kept, sums
    # to trajectories); a duplicate repeats a kept attempt of the same task word for word
    cheating: dict[str, int]  # trajectories dropped as cheating, by rule (one trajectory may fire several)
    cheating_detected: dict[str, int]  # every trajectory, whatever its decision, by rule
    incomplete: list[str] = Field(default_factory=list)  # attempt folders missing one of the two records
    #: Harbor trials with no single ATIF trajectory to read, and why (the agent writes none,
    #: a multi-step trial, a trajectory split into continuations, one that records no tool
    #: call so what it ran cannot be checked); never judged
    no_trajectory: dict[str, str] = Field(default_factory=dict)
    #: Harbor trials without a valid reward (the verifier never ran, failed or was cut short),
    #: and why; those with a trajectory are judged ``not_successful``
    no_reward: dict[str, str] = Field(default_factory=dict)
    #: Harbor trials whose result records an exception, and which (``Type: message``)
    exceptions: dict[str, str] = Field(default_factory=dict)
    loops_failures: int
    loops_all: int
    loop_rate_failures: float | None
    loop_rate_all: float | None
    decisions: list[TrajectoryDecision] = Field(default_factory=list)


# -- Harbor's trial records, as curation reads them ------------------------------------------
# The fields of Harbor's TrialResult (harbor.models.trial.result, Harbor 0.26) that curation
# needs; every other field is ignored, so other Harbor versions' records read as well.

_TOLERANT = ConfigDict(extra="ignore")


class HarborAgentInfo(BaseModel):
    model_config = _TOLERANT

    name: str
    version: str | None = None


class HarborVerifierResult(BaseModel):
    model_config = _TOLERANT

    rewards: dict[str, float | int] | None = None


class HarborExceptionInfo(BaseModel):
    model_config = _TOLERANT

    exception_type: str
    exception_message: str = ""

    def line(self) -> str:
        first = next((ln.strip() for ln in self.exception_message.splitlines() if ln.strip()), "")
        return f"{self.exception_type}: {first}"[:300] if first else self.exception_type


class HarborTrialResult(BaseModel):
    """A trial's ``result.json``."""

    model_config = _TOLERANT

    task_name: str
    trial_name: str
    agent_info: HarborAgentInfo | None = None
    verifier_result: HarborVerifierResult | None = None
    exception_info: HarborExceptionInfo | None = None
    #: Harbor's own judgement (a computed field it writes): rewards present and no recorded
    #: exception that voids them; absent in older records
    reward_valid: bool | None = None
    started_at: datetime | None = None
    step_results: list[dict[str, Any]] | None = None
