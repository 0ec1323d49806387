"""Building ATIF trajectories: the recorder an agent loop calls, and the conversion of a
trajectory into OpenAI chat messages for supervised fine-tuning."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cligym.models.io import save as save_record
from cligym.models.trajectory import (
    DEFAULT_SCHEMA_VERSION,
    Agent,
    ContentPart,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    SchemaVersion,
    Step,
    ToolCall,
    Trajectory,
)


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
        metrics_extra: dict[str, Any] | None = None,
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
        if prompt_tokens is not None or completion_tokens is not None or metrics_extra:
            metrics = Metrics(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                              extra=dict(metrics_extra) if metrics_extra else None)
        return self._add(
            source="agent",
            message=str(message or ""),
            reasoning_content=reasoning_content or None,
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
    in OpenAI's format, arguments as a JSON string, and the model's ``reasoning_content``
    when it had any) and one ``tool`` message per tool call.

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
        if step.reasoning_content:
            message["reasoning_content"] = step.reasoning_content  # as reasoning models' chat templates take it
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
