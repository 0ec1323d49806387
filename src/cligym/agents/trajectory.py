"""Building ATIF trajectories: the recorder an agent loop calls, and the conversion of a
trajectory into OpenAI chat messages for supervised fine-tuning."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, get_args

from cligym.agents.history import ReasoningHistory
from cligym.models.io import save as save_record
from cligym.models.trajectory import (
    Agent,
    ContentPart,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
    Trajectory,
)


class TrajectoryRecorder:
    """Collects the steps of one agent run and turns them into a :class:`Trajectory`.

    ``tool_definitions`` (the ``tools`` sent to the model) and ``reasoning_history`` (whether
    the model had its earlier turns' reasoning in its context) go into the trajectory's
    ``agent``, so the trajectory itself says what the model was offered and shown.
    """

    def __init__(
        self,
        agent_name: str,
        version: str,
        model_name: str | None = None,
        session_id: str | None = None,
        *,
        tool_definitions: list[dict[str, Any]] | None = None,
        reasoning_history: ReasoningHistory | None = None,
        autosave: Path | None = None,
    ) -> None:
        self.agent_info = Agent(name=agent_name, version=version, model_name=model_name)
        #: where the trajectory so far is written after every step (``final_metrics.extra``
        #: says ``partial``), so an attempt killed half-way leaves what it did
        self.autosave = autosave
        self.describe_agent(tool_definitions, reasoning_history)
        self.session_id = session_id or str(uuid.uuid4())
        self.steps: list[Step] = []
        self.trajectory: Trajectory | None = None

    def describe_agent(self, tool_definitions: list[dict[str, Any]] | None = None,
                       reasoning_history: ReasoningHistory | None = None) -> None:
        """Record the tools the model is offered (a copy) and whether its earlier reasoning
        goes back to it; None leaves what was recorded."""
        if reasoning_history is not None and reasoning_history not in get_args(ReasoningHistory):
            raise ValueError(f"reasoning_history must be one of {get_args(ReasoningHistory)} or None, "
                             f"not {reasoning_history!r}")
        if tool_definitions is not None:
            self.agent_info.tool_definitions = copy.deepcopy(tool_definitions)
        if reasoning_history is not None:
            self.agent_info.extra = {**(self.agent_info.extra or {}), "reasoning_history": reasoning_history}

    def _add(self, **fields: Any) -> Step:
        now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        step = Step(step_id=len(self.steps) + 1, timestamp=now, **fields)
        self.steps.append(step)
        self.trajectory = None
        if self.autosave is not None:
            self.save(self.autosave, {"partial": True})
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
        cached_tokens: int | None = None,
        reasoning_content: str | None = None,
        metrics_extra: dict[str, Any] | None = None,
    ) -> Step:
        """One model turn: its text, the tool calls it made and what each call returned.

        ``tool_calls`` are ``(tool_call_id, function_name, arguments)``; ``observations`` are
        ``(tool_call_id, text)`` and must name calls of this same step (or ``None``).
        ``cached_tokens`` is the part of ``prompt_tokens`` the server served from its cache.
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
        if prompt_tokens is not None or completion_tokens is not None or cached_tokens is not None or metrics_extra:
            metrics = Metrics(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                              cached_tokens=cached_tokens, extra=dict(metrics_extra) if metrics_extra else None)
        return self._add(
            source="agent",
            message=str(message or ""),
            reasoning_content=reasoning_content or None,
            tool_calls=calls or None,
            observation=Observation(results=results) if results else None,
            metrics=metrics,
        )

    def mark_condensed(self, tool_call_id: str, kept_chars: int, at_step: int) -> bool:
        """Say in the result's ``extra`` (``{"condensed": {"kept_chars", "from_step"}}``) that from
        agent step ``at_step`` on (counting agent steps only, not a ``step_id``) the model saw
        only the first ``kept_chars`` characters of tool call ``tool_call_id``'s result; the
        stored result stays whole. The same ``kept_chars`` again keeps the earlier step. False
        when no step has a result for that call."""
        for step in self.steps:
            for result in step.observation.results if step.observation else []:
                if result.source_call_id != str(tool_call_id):
                    continue
                extra = dict(result.extra or {})
                earlier = extra.get("condensed")
                if isinstance(earlier, dict) and earlier.get("kept_chars") == kept_chars:
                    at_step = min(at_step, earlier.get("from_step", at_step))
                extra["condensed"] = {"kept_chars": int(kept_chars), "from_step": int(at_step)}
                result.extra = extra
                self.trajectory = None
                return True
        return False

    def finish(self, extra: dict[str, Any] | None = None) -> Trajectory:
        """The trajectory so far, with totals; ``extra`` (e.g. reward, stop reason) goes into
        ``final_metrics.extra``. May be called again after more steps. ``total_cached_tokens``
        is ``None`` when no step reported cached tokens."""
        if not self.steps:
            raise ValueError("a trajectory needs at least one step")
        metrics = [step.metrics for step in self.steps if step.metrics is not None]
        cached = [m.cached_tokens for m in metrics if m.cached_tokens is not None]
        self.trajectory = Trajectory(
            session_id=self.session_id,
            agent=self.agent_info.model_copy(deep=True),
            steps=[step.model_copy(deep=True) for step in self.steps],
            final_metrics=FinalMetrics(
                total_prompt_tokens=sum(m.prompt_tokens or 0 for m in metrics),
                total_completion_tokens=sum(m.completion_tokens or 0 for m in metrics),
                total_cached_tokens=sum(cached) if cached else None,
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


def reasoning_history(trajectory: Trajectory) -> ReasoningHistory | None:
    """The trajectory's reasoning convention (``agent.extra["reasoning_history"]``), or
    ``None`` when it records none (older trajectories) or one cligym does not know."""
    value = (trajectory.agent.extra or {}).get("reasoning_history")
    return value if value in get_args(ReasoningHistory) else None


def to_chat_messages(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The trajectory as OpenAI chat messages (text only), with one ``tool`` message per tool
    call, in call order, as chat templates expect (empty if no result was recorded); results
    that name no call become user messages. ``reasoning_content`` shows what the model had
    in its context: with ``"drop"`` (:func:`reasoning_history`) only on the last assistant
    message, as chat templates such as Qwen3's render it only after the last user turn; else
    on every one. Copied-context steps are kept: they are context for the turns after them.
    """
    messages: list[dict[str, Any]] = []
    for step in trajectory.steps:  # only agent steps have reasoning and tool calls (Step validates)
        message: dict[str, Any] = {"role": "assistant" if step.source == "agent" else step.source,
                                   "content": _text(step.message)}
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
        results = step.observation.results if step.observation else []
        for call in calls:
            texts = [_text(result.content) for result in results if result.source_call_id == call.tool_call_id]
            messages.append({"role": "tool", "tool_call_id": call.tool_call_id, "content": "\n".join(texts)})
        messages += [{"role": "user", "content": _text(result.content)} for result in results
                     if result.source_call_id is None and result.content is not None]
    if reasoning_history(trajectory) == "drop":
        assistants = [m for m in messages if m["role"] == "assistant"]
        for message in assistants[:-1]:
            message.pop("reasoning_content", None)
    return messages
