"""A model client for any OpenAI-compatible chat-completions endpoint (vLLM, SGLang,
llama.cpp, LiteLLM, OpenAI itself...), over the ``openai`` SDK.

- ``ModelConfig``: where and how to call the model; ``ModelConfig.load(path, **overrides)``
  reads a TOML file with the same keys, values given on the command line win.
- ``ModelClient.chat(messages, tools=None, deadline=None) -> Reply``: one completion. The
  body is read and checked by ``cligym.agents.answers``: whatever is not a chat completion
  becomes a ``ModelBadAnswer`` naming what came back, never a traceback.
- Retries are ours (the SDK's are switched off so each attempt is counted once): 408, 429
  and 5xx answers, connection errors, timeouts and unusable answers are retried with
  exponential back-off, or after the server's ``Retry-After`` (capped), up to
  ``max_retries`` times.
- Time: an attempt gets ``timeout`` seconds for the whole answer, body included (a server
  trickling bytes does not extend it), and never more than the time left before the
  caller's ``deadline`` (a ``time.monotonic()`` value); no back-off sleeps past it, and no
  attempt starts with less than ``MIN_ATTEMPT`` left. When the deadline comes first the
  call raises ``ModelDeadline``.
- Every failure the user can act on is a ``ModelError`` (a ``CligymError``) with one line.
  ``fatal`` ones concern the endpoint itself and stop a run: unreachable, key refused,
  unknown model, retries exhausted, a web page where the API should be
  (``ModelNotChatEndpoint``), and ``max_failed_calls`` calls in a row without a completion
  (``ModelBroken``), so an endpoint that answers garbage cannot fail every attempt of a run.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

import openai
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cligym.agents.answers import (
    Reply,
    ToolCall,
    Unusable,
    Usage,
    estimate_usage,
    parse_tool_arguments,
    read_completion,
)
from cligym.agents.transport import (
    BodyFailed,
    connection_reason,
    not_connected,
    one_line,
    read_body,
    retry_after,
    server_message,
    status_line,
)
from cligym.agents.errors import (
    ModelAuthError,
    ModelBadAnswer,
    ModelBroken,
    ModelContextOverflow,
    ModelDeadline,
    ModelError,
    ModelNotChatEndpoint,
    ModelNotFound,
    ModelRetriesExhausted,
    ModelToolsUnsupported,
    ModelUnreachable,
    SERVER_FLAGS,
    context_overflow,
    tools_unsupported,
)
from cligym.errors import BadInput
from cligym.models.io import read_toml

__all__ = [
    "ModelAuthError", "ModelBadAnswer", "ModelBroken", "ModelClient", "ModelConfig", "ModelContextOverflow",
    "ModelDeadline", "ModelError", "ModelNotChatEndpoint", "ModelNotFound", "ModelRetriesExhausted",
    "ModelToolsUnsupported", "ModelUnreachable", "Reply", "ToolCall", "Usage", "parse_tool_arguments",
]

log = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = "CLIGYM_API_KEY"
#: The key sent when the key variable is unset: local servers (vLLM...) accept anything.
NO_KEY = "EMPTY"
RETRY_STATUSES = frozenset({408, 429})
#: The largest answer read (a completion is a few KiB; more is not a chat endpoint).
MAX_BODY = 32 * 2**20
#: Less time than this before the deadline is not worth an attempt.
MIN_ATTEMPT = 0.1


# --------------------------------------------------------------------------- config


class ModelConfig(BaseModel):
    """How to reach the model. Keys of a ``--model-config`` TOML file are these fields."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str = ""
    base_url: str = ""
    api_key_env: str = DEFAULT_API_KEY_ENV
    timeout: float = Field(default=300.0, gt=0, description="seconds per attempt, for the whole answer")
    max_retries: int = Field(default=5, ge=0, description="retries after the first attempt")
    temperature: float | None = Field(default=0.0, ge=0, description="0 as in the paper; None: the endpoint's")
    max_tokens: int | None = Field(default=None, gt=0, description="completion tokens per reply (None: the server's)")
    seed: int | None = Field(default=None, description="sampling seed sent with every request")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="more request fields, sent as they are "
                                       "(e.g. top_k, chat_template_kwargs)")
    backoff_base: float = Field(default=1.0, ge=0, description="first back-off delay, doubled per retry")
    backoff_cap: float = Field(default=30.0, ge=0, description="longest back-off delay")
    retry_after_cap: float = Field(default=60.0, ge=0, description="longest wait a Retry-After may ask for")
    max_failed_calls: int = Field(default=3, ge=1, description="calls in a row without a completion before "
                                                               "the endpoint counts as broken (fatal)")

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> ModelConfig:
        """The config in TOML file ``path``; ``overrides`` that are not None replace its values."""
        path = Path(path)
        data = read_toml(path, "model config")
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**data)
        except ValidationError as exc:
            raise BadInput(f"model config {path}: {_validation_line(exc)}") from None

    def api_key(self) -> str:
        """The key from ``$api_key_env``, or ``EMPTY`` when that variable is unset or empty."""
        return os.environ.get(self.api_key_env) or NO_KEY

    def key_is_set(self) -> bool:
        return bool(os.environ.get(self.api_key_env))


# --------------------------------------------------------------------------- client


class _Failed(Exception):
    """One failed attempt that may be retried: ``reason`` (one line), ``kind`` (timeout,
    unreachable, broken, status; html, error or garbage for an unusable answer, see
    ``Unusable``) and the server's ``delay`` (Retry-After)."""

    def __init__(self, reason: str, kind: str, *, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.kind, self.delay = reason, kind, delay

    @property
    def unusable(self) -> bool:
        return self.kind in ("html", "error", "garbage")


class ModelClient:
    """Chat completions with our retries, deadlines, running token totals and one-line errors."""

    def __init__(self, config: ModelConfig, *, sleep: Callable[[float], None] = time.sleep) -> None:
        if not config.model or not config.base_url:
            raise BadInput("the model client needs a model name and a base URL")
        self.config = config
        self.usage = Usage()
        #: completions received / HTTP attempts made (retries included) / retries
        self.calls = 0
        self.attempts = 0
        self.retries = 0
        #: the errors of the calls in a row that ended without a completion (a completion resets it)
        self.failures: list[str] = []
        self._lock = threading.Lock()
        self._sleep = sleep
        self._openai = openai.OpenAI(
            api_key=config.api_key(),
            base_url=config.base_url,
            timeout=config.timeout,
            max_retries=0,
        )

    def close(self) -> None:
        self._openai.close()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- one completion

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
             deadline: float | None = None) -> Reply:
        """One completion, retried as the config says, before ``deadline`` (a
        ``time.monotonic()`` value; None: only the per-attempt ``timeout`` bounds a call)."""
        cfg = self.config
        try:
            reply = self._complete(self.request(messages, tools), deadline)
        except ModelError as exc:
            if exc.fatal or isinstance(exc, ModelContextOverflow):
                raise  # this conversation's length, not the endpoint
            self.failures.append(str(exc))
            if self.failed_in_a_row >= cfg.max_failed_calls:
                same = len(set(self.failures[-cfg.max_failed_calls:])) == 1
                raise ModelBroken(f"{exc} ({'the same error ' if same else ''}{self.failed_in_a_row} calls in a "
                                  "row without a completion: the run stops)") from None
            raise
        self.failures = []
        return reply

    @property
    def failed_in_a_row(self) -> int:
        return len(self.failures)

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The request body's fields (decoding controls from the config included)."""
        cfg = self.config
        request: dict[str, Any] = {"model": cfg.model, "messages": messages}
        if tools:
            request["tools"] = tools
        for key in ("temperature", "max_tokens", "seed"):
            if getattr(cfg, key) is not None:
                request[key] = getattr(cfg, key)
        if cfg.extra_body:
            request["extra_body"] = dict(cfg.extra_body)
        return request

    def preflight(self, deadline: float | None = None) -> Reply:
        """One small request with a tool, before a run's first attempt: a server that cannot
        do tool calls stops the run here (``ModelToolsUnsupported``, naming the flags that
        enable them), not after every attempt failed."""
        tool = {"type": "function", "function": {"name": "ping", "description": "Answer a ping.",
                                                 "parameters": {"type": "object", "properties": {}}}}
        messages = [{"role": "user", "content": "Call the ping tool once."}]
        reply = self.chat(messages, tools=[tool], deadline=deadline)
        with self._lock:
            self.calls -= 1  # not one of the run's completions: a web page answering next still means no API
        return reply

    def _complete(self, request: dict[str, Any], deadline: float | None) -> Reply:
        """Attempts until a completion, a final error, the last retry or the deadline."""
        cfg = self.config
        failures: list[_Failed] = []
        while True:
            timeout = cfg.timeout
            if deadline is not None:
                timeout = min(timeout, deadline - time.monotonic())
                if timeout < MIN_ATTEMPT:
                    raise self._deadline_error(failures)
            self.attempts += 1
            try:
                return self._attempt(request, timeout)
            except _Failed as failure:
                failures.append(failure)
            failure = failures[-1]
            if failure.kind == "html" and self.calls == 0:
                raise ModelNotChatEndpoint(f"the model endpoint at {cfg.base_url} answered with {failure.reason}, "
                                           "not a chat completion: is it an OpenAI-compatible API (the base URL "
                                           "usually ends in /v1)?")
            if len(failures) > cfg.max_retries:
                raise self._exhausted(failures)
            delay = failure.delay
            if delay is None:
                delay = min(cfg.backoff_cap, cfg.backoff_base * 2 ** (len(failures) - 1))
            if deadline is not None and time.monotonic() + delay >= deadline:
                raise self._deadline_error(failures)
            self.retries += 1
            log.info("model call failed (%s); retry %d of %d in %.2fs", failure.reason, len(failures),
                     cfg.max_retries, delay)
            self._sleep(delay)

    def _attempt(self, request: dict[str, Any], timeout: float) -> Reply:
        """One HTTP exchange: the Reply, ``_Failed`` (may be retried) or a final ModelError."""
        cfg = self.config
        stop_at = time.monotonic() + timeout
        try:
            with self._openai.chat.completions.with_streaming_response.create(**request, timeout=timeout) as answer:
                content_type = answer.headers.get("content-type", "").lower()
                body = read_body(answer, stop_at, timeout, MAX_BODY)
        except BodyFailed as exc:
            raise _Failed(exc.reason, exc.kind) from None
        except openai.APITimeoutError:
            raise _Failed(f"no answer within {timeout:.3g}s", "timeout") from None
        except openai.APIConnectionError as exc:
            if not_connected(exc):
                raise _Failed(connection_reason(exc), "unreachable") from None
            raise _Failed(f"the connection broke ({connection_reason(exc)})", "broken") from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status not in RETRY_STATUSES and (status < 500 or self._known_limit(exc, request)):
                raise self._status_error(exc, request) from None
            raise _Failed(status_line(exc), "status",
                          delay=retry_after(exc.response.headers, cfg.retry_after_cap)) from None
        except openai.OpenAIError as exc:
            raise ModelError(f"the model endpoint at {cfg.base_url} failed: {one_line(exc)}") from None
        try:
            reply = read_completion(body, content_type, call_number=self.calls)
        except Unusable as exc:
            raise _Failed(exc.what, exc.kind) from None
        if reply.usage_estimated:
            reply.usage = estimate_usage(request["messages"], reply)
        with self._lock:  # several agents may share one client (concurrent rollouts)
            self.calls += 1
            self.usage = self.usage + reply.usage
        return reply

    # --- helpers

    def _exhausted(self, failures: list[_Failed]) -> ModelError:
        cfg, last = self.config, failures[-1]
        attempts = _attempts(len(failures))
        if last.unusable:
            line = f"the model endpoint at {cfg.base_url} answered with {last.reason}, not a chat completion"
            if self.calls == 0 and all(f.kind in ("html", "garbage") for f in failures):
                return ModelNotChatEndpoint(f"{line} ({attempts}), and has given none: is it an "
                                            "OpenAI-compatible chat endpoint?")
            return ModelBadAnswer(f"{line} ({attempts})")
        if last.kind == "unreachable":
            return ModelUnreachable(f"cannot reach the model endpoint at {cfg.base_url}: {last.reason} ({attempts})")
        return ModelRetriesExhausted(f"the model endpoint at {cfg.base_url} failed {attempts}, "
                                     f"retries exhausted; last: {last.reason}")

    def _deadline_error(self, failures: list[_Failed]) -> ModelDeadline:
        tried = f" ({_attempts(len(failures))}; last: {failures[-1].reason})" if failures else ""
        return ModelDeadline(f"no completion from the model endpoint at {self.config.base_url} within the "
                             f"time limit{tried}")

    @staticmethod
    def _known_limit(exc: openai.APIStatusError, request: dict[str, Any]) -> bool:
        """A 5xx that is no passing failure: the server cannot do tools (llama.cpp's 500)."""
        return "tools" in request and tools_unsupported(server_message(exc))

    def _status_error(self, exc: openai.APIStatusError, request: dict[str, Any]) -> ModelError:
        cfg, status = self.config, exc.status_code
        detail = server_message(exc)
        suffix = f" [HTTP {status}{': ' + detail if detail else ''}]"
        if "tools" in request and tools_unsupported(detail):
            return ModelToolsUnsupported(f"the model endpoint at {cfg.base_url} cannot do tool calls as it runs: "
                                         f"{SERVER_FLAGS}{suffix}")
        if context_overflow(detail):
            return ModelContextOverflow(f"the conversation is longer than the model's context{suffix}")
        if status in (401, 403):
            unset = "" if cfg.key_is_set() else "; it is not set now"
            return ModelAuthError(f"the model endpoint refused the API key (set ${cfg.api_key_env}{unset}){suffix}")
        if status == 404:
            return ModelNotFound(f"the model endpoint at {cfg.base_url} does not serve model {cfg.model!r} "
                                 f"(check the model name and the base URL, usually ending in /v1){suffix}")
        return ModelError(f"the model endpoint at {cfg.base_url} rejected the request{suffix}")


# --------------------------------------------------------------------------- text helpers


def _attempts(n: int) -> str:
    return f"{n} attempt" + ("" if n == 1 else "s")


def _validation_line(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ())) or "value"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return one_line("; ".join(parts))
