"""A model client for any OpenAI-compatible chat-completions endpoint (vLLM, SGLang,
llama.cpp, LiteLLM, OpenAI itself...), over the ``openai`` SDK.

- ``ModelConfig``: where and how to call the model; ``ModelConfig.load(path, **overrides)``
  reads a TOML file with the same keys, values given on the command line win.
- ``ModelClient.chat(messages, tools=None) -> Reply``: one completion. Tool-call arguments
  are parsed here; malformed JSON is reported in ``ToolCall.error``, never raised.
- Retries are ours (the SDK's are switched off so each attempt is counted once): 408, 429
  and 5xx answers, connection errors and timeouts are retried with exponential back-off,
  or after the server's ``Retry-After`` (capped), up to ``max_retries`` times.
- Every failure the user can act on is a ``ModelError`` (a ``CligymError``) with one line.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import time
import tomllib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import openai
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cligym.errors import BadInput, CligymError

log = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = "CLIGYM_API_KEY"
#: The key sent when the key variable is unset: local servers (vLLM...) accept anything.
NO_KEY = "EMPTY"
RETRY_STATUSES = frozenset({408, 429})
MAX_DETAIL = 240


# --------------------------------------------------------------------------- errors


class ModelError(CligymError):
    """The model endpoint could not give a completion (base of the errors below).

    A plain ModelError concerns one request (e.g. a 400 for a conversation longer than the
    model's context): the run may go on. The subclasses with ``fatal`` set concern the
    endpoint itself, so every later request would fail too: the run stops.
    """

    fatal = False


class ModelUnreachable(ModelError):
    """Nothing answers at the endpoint's address (after the retries)."""

    fatal = True

    exit_code = 3


class ModelAuthError(ModelError):
    """The endpoint refused the API key (HTTP 401 or 403)."""

    fatal = True

    exit_code = 2


class ModelNotFound(ModelError):
    """The endpoint does not know the model, or the base URL is wrong (HTTP 404)."""

    fatal = True

    exit_code = 2


class ModelRetriesExhausted(ModelError):
    """Rate limits, server errors or timeouts outlasted every retry."""

    fatal = True


# --------------------------------------------------------------------------- config


class ModelConfig(BaseModel):
    """How to reach the model. Keys of a ``--model-config`` TOML file are these fields."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str = ""
    base_url: str = ""
    api_key_env: str = DEFAULT_API_KEY_ENV
    timeout: float = Field(default=300.0, gt=0, description="seconds per call (each attempt)")
    max_retries: int = Field(default=5, ge=0, description="retries after the first attempt")
    temperature: float | None = Field(default=None, ge=0, description="None: the endpoint's default")
    backoff_base: float = Field(default=1.0, ge=0, description="first back-off delay, doubled per retry")
    backoff_cap: float = Field(default=30.0, ge=0, description="longest back-off delay")
    retry_after_cap: float = Field(default=60.0, ge=0, description="longest wait a Retry-After may ask for")

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> ModelConfig:
        """The config in TOML file ``path``; ``overrides`` that are not None replace its values."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BadInput(f"model config {path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"model config {path}: cannot read it ({_one_line(exc)})") from None
        except tomllib.TOMLDecodeError as exc:
            raise BadInput(f"model config {path}: not valid TOML ({_one_line(exc)})") from None
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


# --------------------------------------------------------------------------- replies


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens)


class ToolCall(BaseModel):
    """One tool call. Exactly one of ``arguments`` (parsed) and ``error`` (why not) is set."""

    id: str
    name: str
    raw_arguments: str = ""
    arguments: dict[str, Any] | None = None
    error: str | None = None


class Reply(BaseModel):
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)

    def as_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.raw_arguments}}
                for c in self.tool_calls
            ]
        return message


def parse_tool_arguments(raw: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """``(arguments, None)`` or ``(None, error text for the model)``; never raises."""
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f" ({exc.msg} at position {exc.pos})" if isinstance(exc, json.JSONDecodeError) else ""
        return None, f"the arguments are not valid JSON{where}; send a JSON object"
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, not {type(value).__name__}"
    return value, None


# --------------------------------------------------------------------------- client


class ModelClient:
    """Chat completions with our retries, running token totals and one-line errors."""

    def __init__(self, config: ModelConfig, *, sleep: Callable[[float], None] = time.sleep) -> None:
        if not config.model or not config.base_url:
            raise BadInput("the model client needs a model name and a base URL")
        self.config = config
        self.usage = Usage()
        #: completions received / HTTP attempts made (retries included) / retries
        self.calls = 0
        self.attempts = 0
        self.retries = 0
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

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Reply:
        cfg = self.config
        request: dict[str, Any] = {"model": cfg.model, "messages": messages}
        if tools:
            request["tools"] = tools
        if cfg.temperature is not None:
            request["temperature"] = cfg.temperature
        retry = 0
        while True:
            self.attempts += 1
            try:
                completion = self._openai.chat.completions.create(**request)
            except openai.APITimeoutError:
                failure, delay, unreachable = f"no answer within {cfg.timeout:g}s", None, False
            except openai.APIConnectionError as exc:
                failure, delay, unreachable = _connection_reason(exc), None, True
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status not in RETRY_STATUSES and status < 500:
                    raise self._status_error(exc) from None
                failure, delay, unreachable = _status_line(exc), self._retry_after(exc), False
            except openai.OpenAIError as exc:
                raise ModelError(f"the model endpoint at {cfg.base_url} failed: {_one_line(exc)}") from None
            else:
                return self._reply(completion)
            if retry >= cfg.max_retries:
                attempts = retry + 1
                if unreachable:
                    raise ModelUnreachable(f"cannot reach the model endpoint at {cfg.base_url}: {failure} "
                                           f"({_attempts(attempts)})")
                raise ModelRetriesExhausted(f"the model endpoint at {cfg.base_url} failed {_attempts(attempts)}, "
                                            f"retries exhausted; last: {failure}")
            if delay is None:
                delay = min(cfg.backoff_cap, cfg.backoff_base * 2**retry)
            retry += 1
            self.retries += 1
            log.info("model call failed (%s); retry %d of %d in %.2fs", failure, retry, cfg.max_retries, delay)
            self._sleep(delay)

    # --- helpers

    def _reply(self, completion: Any) -> Reply:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise ModelError(f"the model endpoint at {self.config.base_url} answered without a completion "
                             f"(no choices): {_one_line(completion)}")
        choice = choices[0]
        message = choice.message
        calls = []
        for index, call in enumerate(message.tool_calls or []):
            function = getattr(call, "function", None)
            if function is not None:
                name, raw = function.name or "", function.arguments
            else:  # a custom (non-function) tool call: its input is the raw text
                custom = getattr(call, "custom", None)
                name, raw = getattr(custom, "name", "") or "", getattr(custom, "input", "")
            raw = raw if isinstance(raw, str) else json.dumps(raw)
            arguments, error = parse_tool_arguments(raw)
            calls.append(ToolCall(id=call.id or f"call_{self.calls}_{index}", name=name, raw_arguments=raw,
                                  arguments=arguments, error=error))
        usage = Usage()
        reported = getattr(completion, "usage", None)
        if reported is not None:
            usage = Usage(prompt_tokens=reported.prompt_tokens or 0, completion_tokens=reported.completion_tokens or 0)
        self.calls += 1
        self.usage = self.usage + usage
        return Reply(content=message.content or "", tool_calls=calls, finish_reason=choice.finish_reason,
                     usage=usage)

    def _status_error(self, exc: openai.APIStatusError) -> ModelError:
        cfg, status = self.config, exc.status_code
        detail = _server_message(exc)
        suffix = f" [HTTP {status}{': ' + detail if detail else ''}]"
        if status in (401, 403):
            unset = "" if cfg.key_is_set() else "; it is not set now"
            return ModelAuthError(f"the model endpoint refused the API key (set ${cfg.api_key_env}{unset}){suffix}")
        if status == 404:
            return ModelNotFound(f"the model endpoint at {cfg.base_url} does not serve model {cfg.model!r} "
                                 f"(check the model name and the base URL, usually ending in /v1){suffix}")
        return ModelError(f"the model endpoint at {cfg.base_url} rejected the request{suffix}")

    def _retry_after(self, exc: openai.APIStatusError) -> float | None:
        """Seconds the server asked us to wait (Retry-After / retry-after-ms), capped; None if none."""
        headers = exc.response.headers
        seconds = None
        value = headers.get("retry-after-ms")
        if value:
            try:
                seconds = float(value) / 1000
            except ValueError:
                pass
        value = headers.get("retry-after")
        if seconds is None and value:
            try:
                seconds = float(value)
            except ValueError:
                try:
                    when = email.utils.parsedate_to_datetime(value)
                except (TypeError, ValueError):
                    when = None
                if when is not None:
                    if when.tzinfo is None:
                        when = when.replace(tzinfo=timezone.utc)
                    seconds = (when - datetime.now(timezone.utc)).total_seconds()
        if seconds is None or seconds != seconds:  # absent or NaN
            return None
        return min(max(seconds, 0.0), self.config.retry_after_cap)


# --------------------------------------------------------------------------- text helpers


def _one_line(value: object, limit: int = MAX_DETAIL) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _attempts(n: int) -> str:
    return f"{n} attempt" + ("" if n == 1 else "s")


def _validation_line(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ())) or "value"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return _one_line("; ".join(parts))


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            body = inner.get("message") or inner.get("detail") or inner
        else:
            body = inner
    if body is None or body == "":
        try:
            body = exc.response.text
        except Exception:  # noqa: BLE001 - a streamed/closed body: no detail
            body = ""
    return _one_line(body, 160)


def _status_line(exc: openai.APIStatusError) -> str:
    detail = _server_message(exc)
    return f"HTTP {exc.status_code}" + (f" ({detail})" if detail else "")


def _connection_reason(exc: openai.APIConnectionError) -> str:
    cause = exc.__cause__
    while cause is not None and not str(cause) and cause.__cause__ is not None:
        cause = cause.__cause__
    return _one_line(cause if cause is not None and str(cause) else exc.message)
