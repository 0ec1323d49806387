"""Records of the rollout stage: one attempt's result, and the pass@k summary."""

from __future__ import annotations

from pydantic import BaseModel, Field

from cligym.models.trajectory import _FORBID


class RolloutResult(BaseModel):
    """The outcome of one attempt: ROLLOUT_DIR/<task>/<attempt>/result.json."""

    model_config = _FORBID

    task_id: str
    attempt: int = Field(ge=0)
    agent: str
    reward: float | None = None
    finished: bool = False
    stop_reason: str = ""
    steps: int = Field(default=0, ge=0)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    seconds: float = Field(default=0.0, ge=0)
    #: the verifier's own last word (``cligym verifier: reward R: why``), or why no reward was read
    verdict: str = ""

    @property
    def successful(self) -> bool:
        return self.reward == 1


class RolloutSummary(BaseModel):
    agent: str
    k: int
    tasks_dir: str = ""  # the exported tasks rolled out (absolute; "" in summaries made before the field)
    tasks: int
    attempts: int
    successes: int
    pass_at_1: float
    pass_at_k: float
    per_task: dict[str, dict[str, float]] = Field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
