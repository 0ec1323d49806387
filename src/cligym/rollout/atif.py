"""ATIF (Agent Trajectory Interchange Format) trajectories, as Harbor defines them.

The models mirror ``harbor.models.trajectories`` field for field (every model forbids unknown
fields, the step-id, agent-only-field and tool-call-reference rules are the same), so a file
one side writes the other side reads. Dumps leave ``None`` fields out, as Harbor's
``Trajectory.to_json_dict`` does; :func:`cligym.records.save` therefore writes them the same way.

What cligym itself writes stays inside ATIF-v1.3 for the widest compatibility (Harbor 0.1.x
accepts only v1.0-v1.3 and requires ``session_id``): plain-string messages, always a
``session_id``, and none of the later fields (``tool_definitions``, ``llm_call_count``,
``is_copied_context``, ``extra`` on tool calls or results). :class:`TrajectoryRecorder` is the
builder an agent loop calls; :func:`to_chat_messages` turns a trajectory into OpenAI chat
messages for supervised fine-tuning.

This module also holds :class:`RolloutResult`, the record written next to each trajectory.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from cligym.records import save as save_record

SchemaVersion = Literal[
    "ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4",
    "ATIF-v1.5", "ATIF-v1.6", "ATIF-v1.7", "ATIF-v1.8",
]

#: The version cligym writes: the newest one old Harbor (0.1.x) still accepts.
DEFAULT_SCHEMA_VERSION: SchemaVersion = "ATIF-v1.3"

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


# -- multimodal content (ATIF-v1.6+; read, never written by cligym) ---------------------------


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


# -- the record next to each trajectory ----------------------------------------------------------


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

    @property
    def successful(self) -> bool:
        return self.reward == 1


# -- building a trajectory -----------------------------------------------------------------------


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds and a ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TrajectoryRecorder:
    """Collects the steps of one agent run and turns them into a :class:`Trajectory`.

    >>> rec = TrajectoryRecorder("cligym-llm", "0.1.0", "some-model", "session-1")
    >>> rec.system("You repair environments."); rec.user("Fix it.")
    >>> rec.agent("Looking.", tool_calls=[("c1", "execute_bash", {"command": "ls"})],
    ...           observations=[("c1", "a b")], prompt_tokens=10, completion_tokens=3)
    >>> trajectory = rec.finish({"reward": 1.0})
    """

    def __init__(
        self,
        agent_name: str,
        version: str,
        model_name: str | None = None,
        session_id: str | None = None,
        *,
        schema_version: SchemaVersion = DEFAULT_SCHEMA_VERSION,
    ) -> None:
        self.agent_info = Agent(name=agent_name, version=version, model_name=model_name)
        self.session_id = session_id or str(uuid.uuid4())
        self.schema_version = schema_version
        self.steps: list[Step] = []
        self.trajectory: Trajectory | None = None

    def _add(self, **fields: Any) -> Step:
        step = Step(step_id=len(self.steps) + 1, timestamp=now_iso(), **fields)
        self.steps.append(step)
        self.trajectory = None
        return step

    def system(self, message: str) -> Step:
        return self._add(source="system", message=str(message))

    def user(self, message: str) -> Step:
        return self._add(source="user", message=str(message))

    def agent(
        self,
        message: str = "",
        tool_calls: list[tuple[str, str, dict[str, Any]]] | None = None,
        observations: list[tuple[str | None, str]] | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        *,
        reasoning_content: str | None = None,
    ) -> Step:
        """One model turn: its text, the tool calls it made and what each call returned.

        ``tool_calls`` are ``(tool_call_id, function_name, arguments)``; ``observations`` are
        ``(tool_call_id, text)`` and must name calls of this same step (or ``None``).
        """
        calls = [
            ToolCall(tool_call_id=str(call_id), function_name=str(name), arguments=dict(arguments or {}))
            for call_id, name, arguments in tool_calls or []
        ]
        ids = {call.tool_call_id for call in calls}
        if len(ids) != len(calls):
            raise ValueError("tool_call_id values must be unique within a step")
        results = []
        for call_id, text in observations or []:
            if call_id is not None and str(call_id) not in ids:
                raise ValueError(f"observation for unknown tool call {call_id!r} (not among this step's tool_calls)")
            results.append(ObservationResult(source_call_id=None if call_id is None else str(call_id),
                                             content="" if text is None else str(text)))
        metrics = None
        if prompt_tokens is not None or completion_tokens is not None:
            metrics = Metrics(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        return self._add(
            source="agent",
            message=str(message or ""),
            reasoning_content=reasoning_content,
            tool_calls=calls or None,
            observation=Observation(results=results) if results else None,
            metrics=metrics,
        )

    def finish(self, extra: dict[str, Any] | None = None) -> Trajectory:
        """The trajectory so far, with totals; ``extra`` (e.g. reward, stop reason) goes into
        ``final_metrics.extra``. May be called again after more steps."""
        if not self.steps:
            raise ValueError("a trajectory needs at least one step")
        metrics = [step.metrics for step in self.steps if step.metrics is not None]
        self.trajectory = Trajectory(
            schema_version=self.schema_version,
            session_id=self.session_id,
            agent=self.agent_info.model_copy(),
            steps=[step.model_copy(deep=True) for step in self.steps],
            final_metrics=FinalMetrics(
                total_prompt_tokens=sum(m.prompt_tokens or 0 for m in metrics),
                total_completion_tokens=sum(m.completion_tokens or 0 for m in metrics),
                total_steps=len(self.steps),
                extra=dict(extra) if extra else None,
            ),
        )
        return self.trajectory

    def save(self, path: Path | str, extra: dict[str, Any] | None = None) -> Path:
        """Write the trajectory atomically (finishing it first if :meth:`finish` was not called
        since the last step, or if ``extra`` is given)."""
        trajectory = self.trajectory if self.trajectory is not None and extra is None else self.finish(extra)
        return save_record(trajectory, Path(path))


# -- OpenAI chat messages for fine-tuning --------------------------------------------------------


def _text(content: str | list[ContentPart] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if part.type == "text" and part.text is not None)


def _arguments_json(arguments: dict[str, Any]) -> str:
    # the agent loop records unparseable arguments as {"_raw": <what the model sent>}
    if set(arguments) == {"_raw"} and isinstance(arguments["_raw"], str):
        return arguments["_raw"]
    return json.dumps(arguments, ensure_ascii=False)


def to_chat_messages(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The trajectory as OpenAI chat messages: system / user / assistant (with ``tool_calls``
    in OpenAI's format, arguments as a JSON string) and one ``tool`` message per tool call.

    Every tool call gets a tool message (empty if no result was recorded), in call order, as
    chat templates expect. Results that name no tool call become user messages (results
    without content, such as bare subagent references, are left out). Media parts of
    multimodal messages are dropped (text only). Steps copied from an earlier trajectory
    (``is_copied_context``) are kept: they are context for the turns that follow.
    """
    messages: list[dict[str, Any]] = []
    for step in trajectory.steps:
        results = step.observation.results if step.observation else []
        if step.source in ("system", "user"):
            messages.append({"role": step.source, "content": _text(step.message)})
            for result in results:
                if result.content is not None:
                    messages.append({"role": "user", "content": _text(result.content)})
            continue
        message: dict[str, Any] = {"role": "assistant", "content": _text(step.message)}
        calls = step.tool_calls or []
        if calls:
            message["tool_calls"] = [
                {"id": call.tool_call_id, "type": "function",
                 "function": {"name": call.function_name, "arguments": _arguments_json(call.arguments)}}
                for call in calls
            ]
        messages.append(message)
        by_call: dict[str, list[str]] = {}
        loose: list[str] = []
        for result in results:
            if result.source_call_id is None:
                if result.content is not None:
                    loose.append(_text(result.content))
            else:
                by_call.setdefault(result.source_call_id, []).append(_text(result.content))
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call.tool_call_id,
                             "content": "\n".join(by_call.get(call.tool_call_id, []))})
        for text in loose:
            messages.append({"role": "user", "content": text})
    return messages
