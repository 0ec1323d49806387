"""The HTTP side of a model call, for the client (``cligym.agents.client``): reading an
answer's body within a time budget, and one-line descriptions of HTTP failures."""

from __future__ import annotations

import contextlib
import email.utils
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from cligym.agents.answers import Failed, describe_text, one_line

if TYPE_CHECKING:  # the SDK is imported where a client is made: a process that makes none never pays for it
    import openai


def read_body(answer: Any, stop_at: float, budget: float, max_bytes: int) -> bytes:
    """The whole body of ``answer`` (the SDK's streamed response) before ``stop_at``
    (``time.monotonic()``), or ``Failed``. Read chunk by chunk, so a server that trickles
    bytes (keep-alive whitespace, a stalled generation behind a proxy) cannot stretch an
    attempt past its budget."""
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in answer.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise Failed(f"an answer larger than {max_bytes // 2**20} MiB", "garbage")
            if time.monotonic() > stop_at:
                raise Failed(f"no complete answer within {budget:.3g}s ({size} bytes came)", "timeout")
    except Failed:
        raise
    except Exception as exc:  # noqa: BLE001 - the HTTP library's own errors, whatever its version
        if any("Timeout" in k.__name__ for k in type(exc).__mro__):  # TimeoutError too
            raise Failed(f"no complete answer within {budget:.3g}s ({size} bytes came)", "timeout") from None
        raise Failed(f"the connection broke after {size} bytes of the answer ({one_line(exc, 120)})",
                     "broken") from None
    return b"".join(chunks)


def not_connected(exc: openai.APIConnectionError) -> bool:
    """Whether the connection was never made (nothing listens, no such host): unreachable,
    as opposed to a connection that broke once made."""
    cause: BaseException | None = exc.__cause__
    while cause is not None:
        if any(k.__name__ in ("ConnectError", "ConnectTimeout") for k in type(cause).__mro__):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def connection_reason(exc: openai.APIConnectionError) -> str:
    cause = exc.__cause__
    while cause is not None and not str(cause) and cause.__cause__ is not None:
        cause = cause.__cause__
    return one_line(cause if cause is not None and str(cause) else exc.message)


def server_message(exc: openai.APIStatusError) -> str:
    """What the server said with an error status: its error message, or what the body is
    (an HTML page and its title, for a proxy's error page)."""
    body = exc.body
    if isinstance(body, list) and body:  # Gemini's OpenAI layer: [{"error": {...}}]
        body = body[0]
    if isinstance(body, dict):
        body = body.get("error", body)
        if isinstance(body, dict):
            body = body.get("message") or body.get("detail") or body
    if body is None or body == "":
        body = ""
        with contextlib.suppress(Exception):  # a streamed/closed body: no detail
            body = exc.response.text
    if isinstance(body, str) and body.strip():
        content_type = exc.response.headers.get("content-type", "").lower()
        what, is_html = describe_text(body, content_type)
        if is_html:
            return what
    return one_line(body, 160)


def status_line(exc: openai.APIStatusError) -> str:
    detail = server_message(exc)
    return f"HTTP {exc.status_code}" + (f" ({detail})" if detail else "")


def retry_after(headers: Any, cap: float) -> float | None:
    """Seconds the server asked us to wait (Retry-After / retry-after-ms), capped; None if none."""
    seconds = None
    for value, unit in ((headers.get("retry-after-ms"), 1000), (headers.get("retry-after"), 1)):
        with contextlib.suppress(TypeError, ValueError):
            seconds = float(value) / unit
            break
    if seconds is None and headers.get("retry-after"):
        with contextlib.suppress(TypeError, ValueError):
            when = email.utils.parsedate_to_datetime(headers.get("retry-after"))
            when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
            seconds = (when - datetime.now(timezone.utc)).total_seconds()
    if seconds is None or seconds != seconds:  # absent or NaN
        return None
    return min(max(seconds, 0.0), cap)
