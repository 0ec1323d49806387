"""A short agent loop: the model calls tools in a container until it calls ``finish`` or a
limit (steps, wall time, tokens) stops it. Every step is recorded for ATIF."""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Literal

from pydantic import BaseModel

from cligym.agents.answers import estimate_tokens
from cligym.agents.client import ModelContextOverflow, ModelDeadline
from cligym.agents.context import condense
from cligym.agents.tools import TOOLS, ToolExecutor, parse_arguments
from cligym.errors import CligymError

StopReason = Literal["finished", "max_steps", "max_seconds", "max_tokens", "model_error", "context_overflow",
                     "stopped"]

NUDGE = "Use the tools to continue the work, or call finish when you are done."
CUT_OFF = ("Your last reply was cut off at the completion-token limit. Reply more briefly: one tool call "
           "at a time, and keep long text out of it.")


class AgentLimits(BaseModel):
    max_steps: int = 50
    max_seconds: float = 1800
    max_tokens: int = 2_000_000
    command_timeout: int = 120
    max_output: int = 10_000
    #: the conversation's size (estimated tokens) above which older outputs are condensed
    context_tokens: int = 100_000


class AgentOutcome(BaseModel):
    stop_reason: StopReason
    steps: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    summary: str = ""
    error: str = ""

    @property
    def finished(self) -> bool:
        return self.stop_reason == "finished"


def _assistant_message(reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or ""}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.raw_arguments}}
            for call in reply.tool_calls
        ]
    return message


def run_agent(
    client,
    executor: ToolExecutor,
    *,
    system: str,
    task: str,
    limits: AgentLimits,
    recorder=None,
    history: list[dict[str, Any]] | None = None,
    stop: threading.Event | None = None,
) -> AgentOutcome:
    """Drive ``client`` on ``task`` with the tools of ``executor``; record every step. With
    ``history`` (a list), the conversation is kept in it: an empty one is filled, a filled
    one goes on with ``task`` as the next user message. When ``stop`` is set (the run is
    stopping), the run ends before its next step with stop reason ``stopped``.

    Every model call gets the run's deadline (``limits.max_seconds`` from the start), so a
    hanging endpoint ends the run with stop reason ``max_seconds`` shortly after it, not
    later. A model error about one request ends the run with stop reason ``model_error``; a
    fatal one (the endpoint unreachable, the key refused, retries exhausted, garbage answers
    again and again) is raised, and so is EngineUnavailable from a tool call (the
    container's engine is gone)."""
    messages = history if history is not None else []
    opening = [] if messages else [{"role": "system", "content": system}]
    messages += [*opening, {"role": "user", "content": task}]  # a given history goes on with ``task``
    if recorder is not None:
        if opening:
            recorder.system(system)
        recorder.user(task)
    started = time.monotonic()
    deadline = started + limits.max_seconds
    prompt = completion = steps = 0
    summary = ""

    def outcome(reason: StopReason, error: str = "") -> AgentOutcome:
        return AgentOutcome(stop_reason=reason, steps=steps, prompt_tokens=prompt, completion_tokens=completion,
                            seconds=round(time.monotonic() - started, 3), summary=summary, error=error)

    while True:
        if stop is not None and stop.is_set():
            return outcome("stopped")
        if steps >= limits.max_steps:
            return outcome("max_steps")
        if time.monotonic() - started >= limits.max_seconds:
            return outcome("max_seconds")
        if prompt + completion >= limits.max_tokens:
            return outcome("max_tokens")
        try:
            reply = _call(client, messages, limits.context_tokens, deadline)
        except ModelDeadline as exc:
            return outcome("max_seconds", str(exc))
        except ModelContextOverflow as exc:
            return outcome("context_overflow", str(exc))
        except CligymError as exc:
            if getattr(exc, "fatal", False):
                raise  # the endpoint itself is gone (unreachable, key refused...): stop the run
            return outcome("model_error", str(exc))
        steps += 1
        prompt += reply.usage.prompt_tokens
        completion += reply.usage.completion_tokens
        messages.append(_assistant_message(reply))
        calls, observations, finished = _execute(reply, executor, messages)
        if finished is not None:
            summary = finished
        if recorder is not None:
            recorder.agent(reply.content or "", tool_calls=calls, observations=observations,
                           prompt_tokens=reply.usage.prompt_tokens, completion_tokens=reply.usage.completion_tokens,
                           reasoning_content=reply.reasoning, metrics_extra=_flags(reply))
        if finished is not None:
            return outcome("finished")
        if not reply.tool_calls or reply.cut_off:
            note = CUT_OFF if reply.cut_off else NUDGE
            messages.append({"role": "user", "content": note})
            if recorder is not None:
                recorder.user(note)


def _execute(reply, executor: ToolExecutor, messages: list[dict[str, Any]]):
    """Run a reply's tool calls, appending each result to ``messages``: (the calls and the
    observations to record, the finish summary or None when finish was not called)."""
    calls, observations, finished = [], [], None
    for call in reply.tool_calls:
        arguments, error = (call.arguments, call.error) if call.error is None else (None, call.error)
        if arguments is None and error is None:
            arguments, error = parse_arguments(call.raw_arguments)
        if error is not None:
            text = error if error.startswith("error:") else f"error: {error}"
        else:
            text = executor.run(call.name, arguments or {})
            if call.name == "finish":
                finished = str((arguments or {}).get("summary", ""))
        calls.append((call.id, call.name, arguments if arguments is not None else {"_raw": call.raw_arguments}))
        observations.append((call.id, text))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    return calls, observations, finished


def _call(client, messages: list[dict[str, Any]], budget: int, deadline: float):
    """One model call on a conversation kept within ``budget`` (estimated tokens); when the
    server still finds it too long, outputs are condensed to half the conversation's size
    and it is asked again once. ``ModelContextOverflow`` when even that does not fit."""
    if not condense(messages, budget):
        raise ModelContextOverflow(f"the conversation does not fit {budget} tokens even with tool outputs "
                                   "shortened")
    try:
        return client.chat(messages, tools=TOOLS, deadline=deadline)
    except ModelContextOverflow:
        if not condense(messages, estimate_tokens(messages) // 2):
            raise
        return client.chat(messages, tools=TOOLS, deadline=deadline)


def _flags(reply) -> dict[str, Any] | None:
    """What the step's metrics should say about the reply beyond its counts."""
    flags = {"usage_estimated": True} if reply.usage_estimated else {}
    if reply.finish_reason == "length":
        flags["finish_reason"] = "length"
    return flags or None


def describe_call(name: str, arguments: dict[str, Any]) -> str:
    """A one-line rendering of a tool call (for logs and curation)."""
    if name == "execute_bash":
        return str(arguments.get("command", ""))
    return f"{name} {json.dumps(arguments, sort_keys=True)[:200]}"
