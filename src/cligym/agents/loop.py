"""A short agent loop: the model calls tools in a container until it calls ``finish`` or a
limit (steps, wall time, tokens) stops it. Every step is recorded for ATIF. Older tool
outputs are condensed to keep the conversation within the model's context (sizes are
estimated from the text: no tokenizer)."""

from __future__ import annotations

import threading
import time
from typing import Any, Literal

from pydantic import BaseModel

from cligym.agents.answers import estimate_tokens
from cligym.agents.client import ModelContextOverflow, ModelDeadline
from cligym.agents.history import argument_error, assistant_message, text_tool_call
from cligym.agents.tools import ToolExecutor, tool_definitions
from cligym.errors import CligymError, Fatal

StopReason = Literal["finished", "max_steps", "max_seconds", "max_tokens", "model_error", "context_overflow",
                     "format_error", "stopped"]

NUDGE = "Use the tools to continue the work, or call finish when you are done."
CUT_OFF = ("Your last reply was cut off at the completion-token limit. Reply more briefly: one tool call "
           "at a time, and keep long text out of it.")
TEXT_CALL = ("Your tool call arrived as text and was not run: {excerpt!r}. Call the tools through the "
             "tool-calling interface, one JSON object of arguments per call.")
#: How much of a condensed observation stays (its head: commands print what matters first).
KEPT_CHARS = 200
#: What replaces the rest of a condensed observation: the model learns what happened.
NOTE = ("[cligym: {n} more characters of this output were left out to fit the model's context; "
        "run the command again if you need them]")
#: Replies in a row without a usable tool call (none, or arguments that are no JSON object)
#: after which the run stops with stop reason ``format_error``, saying what was wrong.
MAX_FORMAT_ERRORS = 3


class AgentLimits(BaseModel):
    max_steps: int = 50
    max_seconds: float = 1800
    max_tokens: int = 2_000_000
    command_timeout: int = 120
    max_output: int = 10_000
    #: the conversation's size (estimated tokens) above which older outputs are condensed;
    #: None: the model config's ``context_tokens``
    context_tokens: int | None = None


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
    episode: int = 0,
) -> AgentOutcome:
    """Drive ``client`` on ``task`` with the tools of ``executor``; record every step. A given
    ``history`` keeps the conversation: an empty one is filled, a filled one goes on with
    ``task``. ``stop`` set ends the run before its next step; ``episode`` (of a task's k)
    moves the sampling seed. Every model call and command gets the run's deadline, so a
    hanging endpoint or command ends the run (``max_seconds``) shortly after it. A ``Fatal``
    model error and EngineUnavailable are raised; other errors end the run with a stop reason."""
    messages = history if history is not None else []
    opening = [] if messages else [{"role": "system", "content": system}]
    messages += [*opening, {"role": "user", "content": task}]  # a given history goes on with ``task``
    if recorder is not None:
        if opening:
            recorder.system(system)
        recorder.user(task)
    run = _Run(client, executor, limits, recorder, episode)
    while True:
        reason = run.limit_reached(stop)
        if reason is not None:
            return run.outcome(reason)
        try:
            reply = run.call(messages)
        except ModelDeadline as exc:
            return run.outcome("max_seconds", str(exc))
        except ModelContextOverflow as exc:
            return run.outcome("context_overflow", str(exc))
        except Fatal:
            raise  # the endpoint itself is gone (unreachable, key refused...): stop the run
        except CligymError as exc:
            return run.outcome("model_error", str(exc))
        messages.append(assistant_message(reply, run.reasoning))
        finished = run.execute(reply, messages)
        if finished is not None:
            run.summary = finished
            return run.outcome("finished")
        problem = run.format_problem(reply)
        if problem is not None and run.format_errors >= MAX_FORMAT_ERRORS:
            return run.outcome("format_error", f"{run.format_errors} replies in a row without a usable tool "
                                               f"call; the last: {problem}")
        note = CUT_OFF if reply.cut_off else problem if not reply.tool_calls else None
        if note is not None:
            messages.append({"role": "user", "content": note})
            if recorder is not None:
                recorder.user(note)


class _Run:
    """One run's counters and limits, and the model call with its context budget."""

    def __init__(self, client, executor: ToolExecutor, limits: AgentLimits, recorder, episode: int) -> None:
        self.client, self.executor, self.limits, self.recorder, self.episode = (client, executor, limits, recorder,
                                                                              episode)
        self.reasoning = client.config.reasoning
        self.budget = limits.context_tokens or client.config.context_tokens
        self.started = time.monotonic()
        self.deadline = self.started + limits.max_seconds
        executor.deadline = self.deadline  # no command outlives the run
        self.tools = tool_definitions(executor.command_timeout)
        if recorder is not None:
            recorder.describe_agent(self.tools, self.reasoning)
        self.prompt = self.completion = self.steps = self.format_errors = 0
        self.summary = ""

    def outcome(self, reason: StopReason, error: str = "") -> AgentOutcome:
        return AgentOutcome(stop_reason=reason, steps=self.steps, prompt_tokens=self.prompt,
                            completion_tokens=self.completion, seconds=round(time.monotonic() - self.started, 3),
                            summary=self.summary, error=error)

    def limit_reached(self, stop: threading.Event | None) -> StopReason | None:
        if stop is not None and stop.is_set():
            return "stopped"
        if self.steps >= self.limits.max_steps:
            return "max_steps"
        if time.monotonic() >= self.deadline:
            return "max_seconds"
        if self.prompt + self.completion >= self.limits.max_tokens:
            return "max_tokens"
        return None

    def call(self, messages: list[dict[str, Any]]):
        """One model call on a conversation kept within the budget (estimated tokens); when
        the server still finds it too long, outputs are condensed to half the conversation's
        size and it is asked again once. ``ModelContextOverflow`` when even that does not fit."""
        if not self._condense(messages, self.budget):
            raise ModelContextOverflow(f"the conversation does not fit {self.budget} tokens even with tool outputs "
                                       "shortened")
        try:
            reply = self.client.chat(messages, tools=self.tools, deadline=self.deadline, episode=self.episode)
        except ModelContextOverflow:
            if not self._condense(messages, estimate_tokens(messages) // 2):
                raise
            reply = self.client.chat(messages, tools=self.tools, deadline=self.deadline, episode=self.episode)
        self.steps += 1
        self.prompt += reply.usage.prompt_tokens
        self.completion += reply.usage.completion_tokens
        return reply

    def _condense(self, messages: list[dict[str, Any]], budget: int) -> bool:
        """Shorten tool observations (in place) until the conversation's estimate fits
        ``budget`` tokens; True when it fits. The oldest go first, so the recent turns only
        when that is not enough; the system prompt and the task stay whole, and no message is
        removed (a tool result must follow the call it answers). Each one is marked in the
        trajectory: the next agent step is the first to see it shortened."""
        if estimate_tokens(messages) <= budget:
            return True
        for message in messages[2:]:
            text = message.get("content")
            if (message.get("role") == "tool" and isinstance(text, str) and len(text) > KEPT_CHARS + len(NOTE)
                    and not text[KEPT_CHARS:].startswith("\n" + NOTE[:20])):  # not shortened already
                message["content"] = text[:KEPT_CHARS] + "\n" + NOTE.format(n=len(text) - KEPT_CHARS)
                if self.recorder is not None:
                    self.recorder.mark_condensed(str(message.get("tool_call_id", "")), KEPT_CHARS, self.steps + 1)
                if estimate_tokens(messages) <= budget:
                    return True
        return False

    def execute(self, reply, messages: list[dict[str, Any]]) -> str | None:
        """Run a reply's tool calls, appending each result to ``messages``, and record the step:
        the finish summary, or None when finish was not called. A call whose arguments could
        not be read is not run; its result says what came and why."""
        calls, observations, finished = [], [], None
        for call in reply.tool_calls:
            if call.error is not None:
                text = argument_error(call.raw_arguments, call.error)
            else:
                text = self.executor.run(call.name, call.arguments or {})
                if call.name == "finish":
                    finished = str((call.arguments or {}).get("summary", ""))
            calls.append((call.id, call.name, call.arguments if call.arguments is not None else
                          {"_raw": call.raw_arguments}))
            observations.append((call.id, text))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        if self.recorder is not None:
            flags = {"usage_estimated": True} if reply.usage_estimated else {}  # beyond the counts
            if reply.cut_off:
                flags["finish_reason"] = "length"
            self.recorder.agent(reply.content or "", tool_calls=calls, observations=observations,
                                prompt_tokens=reply.usage.prompt_tokens,
                                completion_tokens=reply.usage.completion_tokens, reasoning_content=reply.reasoning,
                                metrics_extra=flags or None, cached_tokens=reply.cached_tokens)
        return finished

    def format_problem(self, reply) -> str | None:
        """What made the reply unusable (counted towards ``MAX_FORMAT_ERRORS``), or None."""
        bad = [call for call in reply.tool_calls if call.error is not None]
        if reply.tool_calls and not bad or reply.cut_off:
            self.format_errors = 0
            return None
        self.format_errors += 1
        if bad:
            return f"the arguments of {bad[0].name or 'a tool call'} were not a JSON object ({bad[0].error})"
        written = text_tool_call(reply.content_as_sent)
        return TEXT_CALL.format(excerpt=written) if written else NUDGE
