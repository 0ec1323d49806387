"""A scripted OpenAI-compatible chat-completions server for tests (stdlib only).

It listens on 127.0.0.1 (a free port) in a background thread and answers
``POST /v1/chat/completions`` (and ``/chat/completions``) by replaying a script, one entry
per request:

- ``reply(content, tool_calls=[tool_call(name, arguments)], prompt_tokens=, completion_tokens=)``:
  an assistant message. Arguments given as a dict are JSON-encoded; a str is sent verbatim,
  so malformed JSON can be scripted. ``delay=`` makes the answer slow (for timeouts).
- ``error(status, retry_after=None, message=None)``: an OpenAI-style error answer
  (429 with an optional Retry-After header, 500, 401...).
- ``raw(body, status=200, content_type=...)``: any body (bytes, str, or JSON-encoded data), for
  answers that are not chat completions: ``html_page(title)`` (a web page, e.g. a proxy's),
  ``truncated(content, keep=)`` (a completion's JSON cut short, with a matching
  Content-Length), ``dropped(content, keep=)`` (the connection closes mid-body, short of the
  announced Content-Length), or JSON of the wrong shape (``raw({"choices": []})``).
- ``hang(seconds=None, after_headers=False, trickle=None)``: accept the request and answer
  nothing for ``seconds`` (None: until the server closes, at most ``HANG_CAP``), then close
  the connection; ``after_headers`` sends the status line and headers first; ``trickle``
  (seconds) sends a space that often meanwhile, as keep-alive proxies do.
- a callable ``entry(messages) -> any entry above``: decides from the request's messages
  (e.g. reacts to tool observations). A plain str anywhere means ``reply(str)``.

Quirks of real servers, set on the server as keyword arguments (none consume a script
entry), are the fields of ``tests.llm_quirks.Quirks``: vLLM without a tool-call parser,
SGLang returning calls as text, llama.cpp without jinja, a router without tool endpoints,
context limits in five servers' words, thinking APIs that need reasoning back, strict
history parsing, OpenAI's reasoning models, Mistral's role order, no usage, rate limits.
Per reply: ``reasoning=`` adds ``reasoning_content`` (or the field ``reasoning_field``
names), as a server with a reasoning parser does; ``cached_tokens=`` reports a cache hit.
``sampled(*entries)`` answers as a sampling server: the first entry at temperature 0, else
one drawn with the request's seed (or at random without one).

``.peak`` is the most requests the server was answering at once (concurrency reaches it).

The client's preflight (one request whose only tool is ``ping``) is answered with a call of
``ping`` after the quirks are applied, without consuming a script entry; it is counted in
``.preflights``, not kept in ``.requests``.

When the script is exhausted it answers ``"(script exhausted)"``. Every request body is kept
in ``.requests`` (parsed JSON; headers in ``.headers``), requests without ``model`` and
``messages`` get a 400, and with ``api_key=`` set a request without ``Bearer <api_key>`` gets
a 401; neither consumes a script entry.

    with ScriptedServer([reply("hi")], api_key="k") as server:
        ModelClient(ModelConfig(model="m", base_url=server.base_url, ...))
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Union

from tests.llm_quirks import (
    LLAMACPP_NO_JINJA,
    VLLM_NO_TOOL_PARSER,
    Quirks,
    refusal,
    shape_message,
)

__all__ = ["LLAMACPP_NO_JINJA", "VLLM_NO_TOOL_PARSER", "ScriptedServer", "error", "hang", "html_page", "raw", "reply",
           "sampled", "tool_call", "truncated", "dropped"]

EXHAUSTED = "(script exhausted)"
#: The longest a ``hang()`` waits, so that a server always stops by itself.
HANG_CAP = 60.0
COMPLETION_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass
class ToolCallSpec:
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def raw_arguments(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class ScriptedReply:
    content: str | None = None
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    prompt_tokens: int = 10
    completion_tokens: int = 5
    finish_reason: str | None = None
    delay: float = 0.0
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    cached_tokens: int | None = None


@dataclass
class Sampled:
    """Alternatives a sampling server chooses among (see ``sampled``)."""

    entries: list


@dataclass
class ScriptedError:
    status: int
    message: str | None = None
    retry_after: str | float | None = None
    delay: float = 0.0


@dataclass
class ScriptedRaw:
    body: bytes
    status: int = 200
    content_type: str = "application/json"
    #: send only this many bytes of the body, then close (the Content-Length announces all)
    cut: int | None = None
    delay: float = 0.0


@dataclass
class ScriptedHang:
    seconds: float | None = None
    after_headers: bool = False
    trickle: float | None = None


Entry = Union[ScriptedReply, ScriptedError, ScriptedRaw, ScriptedHang, Sampled, str, Callable[[list], Any]]


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None) -> ToolCallSpec:
    return ToolCallSpec(name=name, arguments={} if arguments is None else arguments, id=id)


def reply(content: str | None = None, tool_calls: Iterable[ToolCallSpec | tuple | dict] = (), *,
          prompt_tokens: int = 10, completion_tokens: int = 5, finish_reason: str | None = None,
          delay: float = 0.0, reasoning: str | None = None, reasoning_field: str = "reasoning_content",
          cached_tokens: int | None = None) -> ScriptedReply:
    """An assistant answer. ``tool_calls`` items: ``tool_call(...)``, ``(name, args)`` or
    ``{"name": ..., "arguments": ..., "id": ...}``."""
    calls = []
    for item in tool_calls:
        if isinstance(item, ToolCallSpec):
            calls.append(item)
        elif isinstance(item, dict):
            calls.append(tool_call(item["name"], item.get("arguments"), item.get("id")))
        else:
            calls.append(tool_call(*item))
    return ScriptedReply(content=content, tool_calls=calls, prompt_tokens=prompt_tokens,
                         completion_tokens=completion_tokens, finish_reason=finish_reason, delay=delay,
                         reasoning=reasoning, reasoning_field=reasoning_field, cached_tokens=cached_tokens)


def sampled(*entries: Entry) -> Sampled:
    """One of ``entries``, as a sampling server would answer: the first at temperature 0 (or
    none given), else one drawn from the request's seed and the conversation's length (a
    fresh draw when no seed comes)."""
    return Sampled(list(entries))


def _draw(entry: Sampled, body: dict[str, Any]) -> Entry:
    if not body.get("temperature"):
        return entry.entries[0]
    seed = body.get("seed")
    rng = random.Random(f"{seed}:{len(body['messages'])}") if seed is not None else random.Random()
    return rng.choice(entry.entries)


def error(status: int, message: str | None = None, *, retry_after: str | float | None = None,
          delay: float = 0.0) -> ScriptedError:
    return ScriptedError(status=status, message=message, retry_after=retry_after, delay=delay)


def raw(body: bytes | str | Any, *, status: int = 200, content_type: str = "application/json",
        delay: float = 0.0) -> ScriptedRaw:
    """Any answer: bytes and str are sent as they are, anything else JSON-encoded."""
    if isinstance(body, str):
        body = body.encode()
    elif not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return ScriptedRaw(body=body, status=status, content_type=content_type, delay=delay)


def html_page(title: str = "Welcome", *, status: int = 200, text: str = "") -> ScriptedRaw:
    """A web page, as a web UI, a login portal or a proxy's error page answers."""
    page = (f"<!DOCTYPE html>\n<html>\n<head><title>{title}</title></head>\n<body>\n<center><h1>{title}</h1>"
            f"</center>\n<p>{text}</p>\n<hr><center>nginx</center>\n</body>\n</html>\n")
    return raw(page, status=status, content_type="text/html; charset=utf-8")


def completion_body(content: str | None = "done", model: str = "test-model") -> bytes:
    """The JSON body of a plain completion, as the server sends it."""
    return json.dumps(_completion(model, ScriptedReply(content=content), 1)).encode()


def truncated(content: str = "a long answer " * 20, *, keep: float = 0.6) -> ScriptedRaw:
    """A completion whose JSON is cut short (the Content-Length matches the short body)."""
    body = completion_body(content)
    return raw(body[: int(len(body) * keep)])


def dropped(content: str = "a long answer " * 20, *, keep: float = 0.5) -> ScriptedRaw:
    """A completion whose connection closes after ``keep`` of the body was sent."""
    body = completion_body(content)
    return ScriptedRaw(body=body, cut=int(len(body) * keep))


def hang(seconds: float | None = None, *, after_headers: bool = False, trickle: float | None = None) -> ScriptedHang:
    return ScriptedHang(seconds=seconds, after_headers=after_headers or trickle is not None, trickle=trickle)


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error"}


class ScriptedServer:
    """A background OpenAI-compatible server replaying ``script``; see the module docstring."""

    def __init__(self, script: Iterable[Entry] = (), api_key: str | None = None, *,
                 models: Iterable[str] = ("test-model",), **quirks: Any) -> None:
        self.script: list[Entry] = list(script)
        self.quirks = Quirks(**quirks)
        self.api_key = api_key
        self.models = list(models)
        #: bodies of every request received (parsed JSON, or the raw text when not JSON)
        self.requests: list[Any] = []
        #: headers of every request, in the same order (lower-cased names)
        self.headers: list[dict[str, str]] = []
        #: (path, status) of every answer, in order (recorded as the answer starts)
        self.answers: list[tuple[str, int]] = []
        #: the client's preflight requests answered (see ``is_preflight``)
        self.preflights = 0
        #: POST requests being answered now, and the most there were at once
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._served = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self), bind_and_activate=False)
        self._httpd.request_queue_size = 128  # a real server's backlog, not socketserver's 5
        self._httpd.server_bind()
        self._httpd.server_activate()
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"scripted-llm-{self.port}", daemon=True)
        self._thread.start()

    # --- control

    def add(self, *entries: Entry) -> None:
        """Append entries to the script (also while serving)."""
        with self._lock:
            self.script.extend(entries)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self.script) - self._served

    def close(self) -> None:
        if self._closing.is_set():
            return
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- serving (called from handler threads)

    def _next_entry(self) -> Entry | None:
        with self._lock:
            if self._served >= len(self.script):
                return None
            entry = self.script[self._served]
            self._served += 1
            return entry

    def _record(self, body: Any, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)

    def _answered(self, path: str, status: int) -> None:
        with self._lock:
            self.answers.append((path, status))

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._closing.wait(seconds)


def is_preflight(body: dict[str, Any]) -> bool:
    """The model client's first request of a run: one message and the one tool ``ping``."""
    tools = body.get("tools") or []
    return (len(body.get("messages") or []) == 1 and len(tools) == 1
            and (tools[0].get("function") or {}).get("name") == "ping")


def _completion(model: str, entry: ScriptedReply, number: int, quirks: Quirks | None = None) -> dict[str, Any]:
    quirks = quirks or Quirks()
    message: dict[str, Any] = {"role": "assistant", "content": entry.content}
    if entry.reasoning is not None:
        message[entry.reasoning_field] = entry.reasoning
    if entry.tool_calls:
        message["tool_calls"] = [
            {"id": call.id or f"call_{number}_{i}", "type": "function",
             "function": {"name": call.name, "arguments": call.raw_arguments()}}
            for i, call in enumerate(entry.tool_calls)
        ]
    message = shape_message(quirks, message)
    finish = entry.finish_reason or ("tool_calls" if message.get("tool_calls") else "stop")
    body = {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": entry.prompt_tokens, "completion_tokens": entry.completion_tokens,
                  "total_tokens": entry.prompt_tokens + entry.completion_tokens},
    }
    if entry.cached_tokens is not None:
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": entry.cached_tokens}
    if not quirks.usage:
        del body["usage"]
    return body


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "server_error"), "param": None,
                      "code": status}}


def _handler_for(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, so no stale keep-alive sockets between attempts
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            pass

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            server._answered(self.path, status)  # before writing: the client may look right after
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                pass  # the client gave up (a timeout): nothing to answer

        def _send_raw(self, entry: ScriptedRaw) -> None:
            server._wait(entry.delay)
            server._answered(self.path, entry.status)
            body = entry.body if entry.cut is None else entry.body[: entry.cut]
            try:
                self.send_response(entry.status)
                self.send_header("Content-Type", entry.content_type)
                self.send_header("Content-Length", str(len(entry.body)))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                pass
            self.close_connection = True

        def _hang(self, entry: ScriptedHang) -> None:
            server._answered(self.path, 200 if entry.after_headers else 0)
            end = time.monotonic() + min(HANG_CAP if entry.seconds is None else entry.seconds, HANG_CAP)
            try:
                if entry.after_headers:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.flush()
                while (left := end - time.monotonic()) > 0:
                    if server._closing.wait(min(left, entry.trickle or left)):
                        break  # the server is closing
                    if entry.trickle:
                        self.wfile.write(b" ")
                        self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                pass  # the client gave up
            self.close_connection = True  # and no answer

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in server.models]})
            else:
                self._send(404, _error_body(404, f"no route GET {self.path}"))

        def do_POST(self) -> None:  # noqa: N802
            with server._lock:
                server.in_flight += 1
                server.peak = max(server.peak, server.in_flight)
            try:
                self._post()
            finally:
                with server._lock:
                    server.in_flight -= 1

        def _post(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0].rstrip("/")
            if path not in COMPLETION_PATHS:
                self._send(404, _error_body(404, f"no route POST {self.path}"))
                return
            try:
                body: Any = json.loads(raw or b"null")
            except (json.JSONDecodeError, UnicodeDecodeError):
                body = raw.decode(errors="replace")
            preflight = isinstance(body, dict) and is_preflight(body)
            if not preflight:
                server._record(body, {k.lower(): v for k, v in self.headers.items()})
            if server.api_key is not None and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                self._send(401, _error_body(401, "Incorrect API key provided."))
                return
            if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body["model"] \
                    or not isinstance(body.get("messages"), list):
                self._send(400, _error_body(400, "a chat completion request needs 'model' and 'messages'"))
                return
            with server._lock:
                refused = refusal(server.quirks, body)
            if refused is not None:
                self._send(refused.status, refused.body, refused.headers)
                return
            if preflight:
                with server._lock:
                    server.preflights += 1
                self._send(200, _completion(body["model"], reply(tool_calls=[tool_call("ping")]), 0, server.quirks))
                return
            entry = server._next_entry()
            number = len(server.requests)
            if isinstance(entry, Sampled):
                entry = _draw(entry, body)
            if callable(entry):
                entry = entry(body["messages"])
            if entry is None:
                entry = ScriptedReply(content=EXHAUSTED, prompt_tokens=0, completion_tokens=0)
            elif isinstance(entry, str):
                entry = ScriptedReply(content=entry)
            if isinstance(entry, ScriptedError):
                server._wait(entry.delay)
                headers = {} if entry.retry_after is None else {"Retry-After": str(entry.retry_after)}
                self._send(entry.status, _error_body(entry.status, entry.message or f"scripted error {entry.status}"),
                           headers)
            elif isinstance(entry, ScriptedReply):
                server._wait(entry.delay)
                self._send(200, _completion(body["model"], entry, number, server.quirks))
            elif isinstance(entry, ScriptedRaw):
                self._send_raw(entry)
            elif isinstance(entry, ScriptedHang):
                self._hang(entry)
            else:
                self._send(500, _error_body(500, f"bad script entry {entry!r}"))

    return Handler
