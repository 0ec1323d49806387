"""A model client for any OpenAI-compatible chat-completions endpoint (vLLM, SGLang,
llama.cpp, LiteLLM, OpenAI itself...), over the ``openai`` SDK. Retries are ours (the SDK's
are off, so each attempt is counted once): 408, 429 and 5xx answers, connection errors,
timeouts and unusable answers are retried. Every failure is a one-line ``ModelError``."""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

import tenacity

from cligym.agents.answers import Failed, Reply, estimate_usage, read_completion
from cligym.agents.config import ModelConfig
from cligym.agents.errors import (
    FIELD_FIXES,
    NO_TOOLS,
    SERVER_FLAGS,
    TOO_LONG,
    UNSUPPORTED,
    ModelAuthError,
    ModelBadAnswer,
    ModelBroken,
    ModelContextOverflow,
    ModelDeadline,
    ModelError,
    ModelFieldRefused,
    ModelNotChatEndpoint,
    ModelNotFound,
    ModelRetriesExhausted,
    ModelToolsUnsupported,
    ModelUnreachable,
)
from cligym.agents.history import text_tool_call, wire_messages
from cligym.agents.transport import (
    connection_reason,
    not_connected,
    one_line,
    read_body,
    retry_after,
    server_message,
    status_line,
)
from cligym.errors import BadInput, Fatal

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 429})
#: The largest answer read (a completion is a few KiB; more is not a chat endpoint).
MAX_BODY = 32 * 2**20
#: Less time than this before the deadline is not worth a request.
MIN_REQUEST = 0.1
#: Retries for an endpoint that cannot be reached and has never answered.
FIRST_CONTACT_RETRIES = 2


# --------------------------------------------------------------------------- client


class ChatClient(Protocol):
    """What a model client gives its users (``ModelClient`` is the one): its config, one
    completion, and an end to its waits when the run stops."""

    config: ModelConfig

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
             deadline: float | None = None, episode: int = 0) -> Reply: ...

    def stop(self) -> None: ...


class ModelClient:
    """Chat completions with our retries, deadlines and one-line errors.

    One client may serve several workers at once (concurrent rollouts): the count of calls
    in a row without a completion is kept per worker thread, so one conversation's failures
    never count against another's; ``stop()`` ends every back-off wait at once."""

    def __init__(self, config: ModelConfig, *, sleep: Callable[[float], None] | None = None) -> None:
        if not config.model or not config.base_url:
            raise BadInput("the model client needs a model name and a base URL")
        self.config = config
        #: completions received / HTTP requests made (retries included) / retries
        self.calls = 0
        self.requests = 0
        self.retries = 0
        #: whether the endpoint has ever answered (anything, an error status included)
        self.reached = False
        #: set by ``stop()``: back-off waits end and no new attempt starts
        self.stopping = threading.Event()
        self._streak = threading.local()
        self._lock = threading.Lock()
        self._sleep = sleep or self.stopping.wait  # stop() ends a wait at once
        import openai  # here, not at the top: its import takes most of a second, and most processes make no client

        self._openai = openai.OpenAI(
            api_key=config.api_key(),
            base_url=config.base_url,
            timeout=config.timeout,
            max_retries=0,
        )

    def stop(self) -> None:
        """The run is stopping: waits end now and later calls raise ``ModelDeadline``."""
        self.stopping.set()

    @property
    def failures(self) -> list[str]:
        """The errors of this worker's calls in a row that ended without a completion."""
        return self._streak.__dict__.setdefault("failures", [])

    # --- one completion

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
             deadline: float | None = None, episode: int = 0) -> Reply:
        """One completion, retried as the config says, before ``deadline`` (a
        ``time.monotonic()`` value; None: only the per-attempt ``timeout``, for the whole answer
        body included, bounds a call). ``episode`` (of a task's k) moves the seed, if one is set."""
        cfg = self.config
        try:
            reply = self._complete(self.request(messages, tools, episode=episode), deadline)
        except ModelError as exc:
            if isinstance(exc, Fatal | ModelContextOverflow):
                raise  # this conversation's length, not the endpoint
            self.failures.append(str(exc))
            if len(self.failures) >= cfg.max_failed_calls:
                same = len(set(self.failures[-cfg.max_failed_calls:])) == 1
                raise ModelBroken(f"{exc} ({'the same error ' if same else ''}{len(self.failures)} calls in a "
                                  "row without a completion: the run stops)") from None
            raise
        self.failures.clear()
        return reply

    def request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
                episode: int = 0) -> dict[str, Any]:
        """The request body's fields: the conversation as sent (``wire_messages``) and the
        decoding controls the config sets and does not ``omit``."""
        cfg = self.config.sampling(episode)
        request: dict[str, Any] = {"model": cfg.model, "messages": wire_messages(messages)}
        if tools:
            request["tools"] = tools
        for key, field in (("temperature", "temperature"), ("max_tokens", cfg.max_tokens_field), ("seed", "seed")):
            if getattr(cfg, key) is not None and key not in cfg.omit:
                request[field] = getattr(cfg, key)
        if cfg.extra_body:
            request["extra_body"] = dict(cfg.extra_body)
        return request

    def preflight(self) -> Reply:
        """One small request with a tool, before a run's first attempt: a server that cannot
        do tool calls stops the run here (``ModelToolsUnsupported``, naming the flags that
        enable them), not after every attempt failed; so does one that writes the call as
        text (SGLang without ``--tool-call-parser``)."""
        tool = {"type": "function", "function": {"name": "ping", "description": "Answer a ping.",
                                                 "parameters": {"type": "object", "properties": {}}}}
        messages = [{"role": "user", "content": "Call the ping tool once."}]
        reply = self.chat(messages, tools=[tool])
        with self._lock:
            self.calls -= 1  # not one of the run's completions: a web page answering next still means no API
        written = text_tool_call(reply.content_as_sent)
        if not reply.tool_calls and written is not None:
            raise ModelToolsUnsupported(f"the model endpoint at {self.config.base_url} returned its tool call as "
                                        f"text ({written!r}), not parsed: {SERVER_FLAGS}")
        if not reply.tool_calls:
            log.warning("the model answered the preflight without calling its tool: %s", one_line(reply.content, 80))
        return reply

    def _complete(self, request: dict[str, Any], deadline: float | None) -> Reply:
        """Attempts until a completion, a final error, the last retry or the deadline. The
        wait before a retry is the server's Retry-After plus up to a tenth more, or
        exponential back-off with "equal jitter" (half of ``backoff_base`` doubled per retry
        waited for sure, half at random), so workers that failed together do not retry
        together; a Retry-After of 0 gets the back-off too, as the OpenAI SDK does. No
        retry once the run is stopping or when its wait would end past ``deadline``, and no
        more than ``FIRST_CONTACT_RETRIES`` for an endpoint that has never answered anything
        and cannot be reached (a wrong URL, a server not started): the user hears of it at once."""
        cfg = self.config
        failures: list[Failed] = []
        half, cap = cfg.backoff_base / 2, cfg.backoff_cap / 2
        backoff = tenacity.wait_exponential(multiplier=half, max=cap) + tenacity.wait_random_exponential(
            multiplier=half, max=cap)

        def wait(state: tenacity.RetryCallState) -> float:
            delay = failures[-1].delay
            return delay * (1 + random.random() / 10) if delay else backoff(state)

        def stop(state: tenacity.RetryCallState) -> bool:
            never_reached = not self.reached and failures[-1].kind == "unreachable"
            return (state.attempt_number > cfg.max_retries or self.stopping.is_set()
                    or never_reached and len(failures) > FIRST_CONTACT_RETRIES
                    or deadline is not None and time.monotonic() + (state.upcoming_sleep or 0) >= deadline)

        retrying = tenacity.Retrying(retry=tenacity.retry_if_exception_type(Failed), wait=wait, stop=stop,
                                     sleep=self._sleep, before_sleep=self._before_sleep, reraise=True)
        try:
            return retrying(self._timed_attempt, request, deadline, failures)
        except Failed:
            raise self._final_error(failures) from None

    def _timed_attempt(self, request: dict[str, Any], deadline: float | None, failures: list[Failed]) -> Reply:
        timeout = self.config.timeout
        if deadline is not None:
            timeout = min(timeout, deadline - time.monotonic())
        if self.stopping.is_set() or timeout < MIN_REQUEST:
            raise self._deadline_error(failures)
        self.requests += 1
        try:
            return self._attempt(request, timeout)
        except Failed as failure:
            failures.append(failure)
            if failure.kind == "html" and self.calls == 0:
                raise ModelNotChatEndpoint(f"the model endpoint at {self.config.base_url} answered with "
                                           f"{failure.reason}, not a chat completion: is it an OpenAI-compatible "
                                           "API (the base URL usually ends in /v1)?") from None
            raise

    def _before_sleep(self, state: tenacity.RetryCallState) -> None:
        self.retries += 1
        error = state.outcome.exception() if state.outcome else None
        log.info("model call failed (%s); retry %d of %d in %.2fs", getattr(error, "reason", error),
                 state.attempt_number, self.config.max_retries, state.upcoming_sleep)

    def _final_error(self, failures: list[Failed]) -> ModelError:
        if not self.stopping.is_set() and (len(failures) > self.config.max_retries or failures[-1].kind ==
                                           "unreachable" and len(failures) > FIRST_CONTACT_RETRIES):
            return self._exhausted(failures)
        return self._deadline_error(failures)  # the next wait would have ended past the deadline

    def _attempt(self, request: dict[str, Any], timeout: float) -> Reply:
        """One HTTP exchange: the Reply, ``Failed`` (may be retried) or a final ModelError."""
        import openai  # (imported already: the client made one)

        cfg = self.config
        stop_at = time.monotonic() + timeout
        try:
            with self._openai.chat.completions.with_streaming_response.create(**request, timeout=timeout) as answer:
                content_type = answer.headers.get("content-type", "").lower()
                body = read_body(answer, stop_at, timeout, MAX_BODY)
        except openai.APITimeoutError:
            raise Failed(f"no answer within {timeout:.3g}s", "timeout") from None
        except openai.APIConnectionError as exc:
            if not_connected(exc):
                raise Failed(connection_reason(exc), "unreachable") from None
            raise Failed(f"the connection broke ({connection_reason(exc)})", "broken") from None
        except openai.APIStatusError as exc:
            self.reached = True
            error = self._status_error(exc, request)
            no_tools = isinstance(error, ModelToolsUnsupported)  # a 5xx saying so (llama.cpp's) is no passing failure
            if exc.status_code in RETRY_STATUSES or exc.status_code >= 500 and not no_tools:
                raise Failed(status_line(exc), "status",
                             delay=retry_after(exc.response.headers, cfg.retry_after_cap)) from None
            raise error from None
        except openai.OpenAIError as exc:
            raise ModelError(f"the model endpoint at {cfg.base_url} failed: {one_line(exc)}") from None
        self.reached = True
        reply = read_completion(body, content_type, call_number=self.calls)
        if reply.usage_estimated:
            reply.usage = estimate_usage(request["messages"], reply)
        with self._lock:  # several agents may share one client (concurrent rollouts)
            self.calls += 1
        return reply

    # --- helpers

    def _exhausted(self, failures: list[Failed]) -> ModelError:
        cfg, last = self.config, failures[-1]
        attempts = _attempts(len(failures))
        if last.kind in ("html", "error", "garbage"):  # an answer that is not a chat completion
            line = f"the model endpoint at {cfg.base_url} answered with {last.reason}, not a chat completion"
            if self.calls == 0 and all(f.kind in ("html", "garbage") for f in failures):
                return ModelNotChatEndpoint(f"{line} ({attempts}), and has given none: is it an "
                                            "OpenAI-compatible chat endpoint?")
            return ModelBadAnswer(f"{line} ({attempts})")
        if last.kind == "unreachable":
            return ModelUnreachable(f"cannot reach the model endpoint at {cfg.base_url}: {last.reason} ({attempts})")
        return ModelRetriesExhausted(f"the model endpoint at {cfg.base_url} failed {attempts}, "
                                     f"retries exhausted; last: {last.reason}")

    def _deadline_error(self, failures: list[Failed]) -> ModelDeadline:
        tried = f" ({_attempts(len(failures))}; last: {failures[-1].reason})" if failures else ""
        return ModelDeadline(f"no completion from the model endpoint at {self.config.base_url} within the "
                             f"time limit{tried}")

    def _status_error(self, exc: openai.APIStatusError, request: dict[str, Any]) -> ModelError:
        cfg, status = self.config, exc.status_code
        detail = server_message(exc)
        suffix = f" [HTTP {status}{': ' + detail if detail else ''}]"
        if "tools" in request and NO_TOOLS.search(detail):
            return ModelToolsUnsupported(f"the model endpoint at {cfg.base_url} cannot do tool calls as it runs: "
                                         f"{SERVER_FLAGS}{suffix}")
        refused = UNSUPPORTED.search(detail)
        if status == 400 and refused:
            field = refused.group(1)
            fix = FIELD_FIXES.get(field, f'omit = ["{field}"]')
            return ModelFieldRefused(f"the model endpoint refuses the request field {field!r} for model "
                                     f"{cfg.model!r}: set {fix} in the model config (--model-config){suffix}")
        if TOO_LONG.search(detail):
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
