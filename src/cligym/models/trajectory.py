"""ATIF (Agent Trajectory Interchange Format) trajectories, as Harbor defines them.

The models mirror ``harbor.models.trajectories`` (Harbor 0.25) field for field, in the same
order, with the same defaults and constraints (every model forbids unknown fields, the step-id,
agent-only-field, no-LLM-step and tool-call-reference rules are the same), so a file one side
writes the other side reads. Dumps leave ``None`` fields out, as Harbor's
``Trajectory.to_json_dict`` does; :func:`cligym.models.io.save` therefore writes them the same way.

cligym writes ATIF-v1.8, the version Harbor 0.25 writes by default, and uses what the later
versions added to say what the model really saw: ``agent.tool_definitions`` (the tools offered
to the model), ``metrics.cached_tokens``, ``extra`` on observation results (an observation the
model later saw shortened, see :meth:`cligym.agents.trajectory.TrajectoryRecorder.mark_condensed`)
and ``agent.extra["reasoning_history"]``. Old Harbor (0.1.x, which accepts only v1.0-v1.3)
rejects these files; every later Harbor reads them. Every earlier version is still read.
:class:`TrajectoryRecorder` is the builder an agent loop calls (:mod:`cligym.agents.trajectory`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SchemaVersion = Literal[
    "ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4",
    "ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7", "ATIF-v1.8",
]

#: The version cligym writes: Harbor 0.25's ``Trajectory.schema_version`` default.
DEFAULT_SCHEMA_VERSION: SchemaVersion = "ATIF-v1.8"

_FORBID = ConfigDict(extra="forbid")

AudioMediaType = Literal[
    "audio/wav", "audio/mpeg", "audio/mp4", "audio/aac", "audio/ogg", "audio/flac", "audio/webm", "audio/aiff",
]
_AUDIO_ALIASES = {
    "audio/mp3": "audio/mpeg", "audio/mpga": "audio/mpeg", "audio/x-mpeg": "audio/mpeg",
    "audio/x-wav": "audio/wav", "audio/wave": "audio/wav", "audio/vnd.wave": "audio/wav",
    "audio/x-m4a": "audio/mp4", "audio/m4a": "audio/mp4", "audio/x-aac": "audio/aac",
    "audio/x-flac": "audio/flac", "audio/x-aiff": "audio/aiff",
}


class _Model(BaseModel):
    """Dumps leave ``None`` fields out unless asked otherwise (Harbor's ``to_json_dict``)."""

    model_config = _FORBID

    def model_dump(self, *, exclude_none: bool = True, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        return super().model_dump(exclude_none=exclude_none, **kwargs)

    def model_dump_json(self, *, exclude_none: bool = True, **kwargs: Any) -> str:  # type: ignore[override]
        return super().model_dump_json(exclude_none=exclude_none, **kwargs)

    def to_json_dict(self, exclude_none: bool = True) -> dict[str, Any]:
        return self.model_dump(exclude_none=exclude_none, mode="json")


# -- multimodal content (ATIF-v1.6+, audio v1.8+; read, never written by cligym) ---------------


class ImageSource(_Model):
    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    path: str


class AudioSource(_Model):
    media_type: AudioMediaType
    path: str
    duration_sec: float | None = Field(default=None, ge=0)

    @field_validator("media_type", mode="before")
    @classmethod
    def _normalize_media_type(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
            return _AUDIO_ALIASES.get(value, value)
        return value


class ContentPart(_Model):
    type: Literal["text", "image", "audio"]
    text: str | None = None
    source: ImageSource | AudioSource | None = None

    @model_validator(mode="after")
    def _check_type(self) -> ContentPart:
        if self.type == "text":
            if self.text is None:
                raise ValueError("'text' field is required when type='text'")
            if self.source is not None:
                raise ValueError("'source' field is not allowed when type='text'")
            return self
        if self.source is None:
            raise ValueError(f"'source' field is required when type='{self.type}'")
        if self.text is not None:
            raise ValueError(f"'text' field is not allowed when type='{self.type}'")
        expected = ImageSource if self.type == "image" else AudioSource
        if not isinstance(self.source, expected):
            raise ValueError(f"type='{self.type}' requires a {expected.__name__}")
        return self


# -- the trajectory ----------------------------------------------------------------------------


class Agent(_Model):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class ToolCall(_Model):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class SubagentTrajectoryRef(_Model):
    trajectory_id: str | None = None
    session_id: str | None = None
    trajectory_path: str | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _resolvable(self) -> SubagentTrajectoryRef:
        if self.trajectory_id is None and self.trajectory_path is None:
            raise ValueError("SubagentTrajectoryRef must set trajectory_id or trajectory_path")
        return self


class ObservationResult(_Model):
    source_call_id: str | None = None
    content: str | list[ContentPart] | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None
    extra: dict[str, Any] | None = None


class Observation(_Model):
    results: list[ObservationResult]


class Metrics(_Model):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Model):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


AGENT_ONLY_FIELDS = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class Step(_Model):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str | list[ContentPart]
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError as exc:
                raise ValueError(f"Invalid ISO 8601 timestamp: {exc}") from None
        return value

    @model_validator(mode="after")
    def _agent_only_fields(self) -> Step:
        if self.source != "agent":
            for name in AGENT_ONLY_FIELDS:
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"Field '{name}' is only applicable when source is 'agent', but source is '{self.source}'"
                    )
        return self

    @model_validator(mode="after")
    def _no_llm_fields_without_llm_call(self) -> Step:
        if self.llm_call_count == 0 and self.source == "agent":
            for name in ("metrics", "reasoning_content"):
                if getattr(self, name) is not None:
                    raise ValueError(f"Field '{name}' must be absent when llm_call_count is 0")
        return self


class Trajectory(_Model):
    schema_version: SchemaVersion = DEFAULT_SCHEMA_VERSION
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list[Trajectory] | None = None

    @model_validator(mode="after")
    def _step_ids(self) -> Trajectory:
        for index, step in enumerate(self.steps):
            if step.step_id != index + 1:
                raise ValueError(
                    f"steps[{index}].step_id: expected {index + 1} (sequential from 1), got {step.step_id}"
                )
        return self

    @model_validator(mode="after")
    def _subagent_ids(self) -> Trajectory:
        seen: set[str] = set()
        for index, sub in enumerate(self.subagent_trajectories or []):
            if sub.trajectory_id is None:
                raise ValueError(f"subagent_trajectories[{index}].trajectory_id is required for embedded subagents")
            if sub.trajectory_id in seen:
                raise ValueError(f"subagent_trajectories[{index}].trajectory_id {sub.trajectory_id!r} is not unique")
            seen.add(sub.trajectory_id)
        return self

    @model_validator(mode="after")
    def _tool_call_references(self) -> Trajectory:
        for step in self.steps:
            if step.observation is None:
                continue
            ids = {call.tool_call_id for call in step.tool_calls or []}
            for result in step.observation.results:
                if result.source_call_id is not None and result.source_call_id not in ids:
                    raise ValueError(
                        f"Observation result references source_call_id '{result.source_call_id}' "
                        f"which is not found in step {step.step_id}'s tool_calls"
                    )
        return self

    @property
    def agent_steps(self) -> list[Step]:
        return [step for step in self.steps if step.source == "agent"]
