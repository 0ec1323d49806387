"""A scripted OpenAI-compatible chat-completions server for tests (stdlib only).

It listens on 127.0.0.1 (a free port) in a background thread and answers
``POST /v1/chat/completions`` (and ``/chat/completions``) by replaying a script, one entry
per request:

- ``reply(content, tool_calls=[tool_call(name, arguments)], prompt_tokens=, completion_tokens=)``:
  an assistant message. Arguments given as a dict are JSON-encoded; a str is sent verbatim,
  so malformed JSON can be scripted. ``delay=`` makes the answer slow (for timeouts).
- ``error(status, retry_after=None, message=None)``: an OpenAI-style error answer
  (429 with an optional Retry-After header, 500, 401...).
- a callable ``entry(messages) -> reply(...) | error(...) | str``: decides from the request's
  messages (e.g. reacts to tool observations). A plain str anywhere means ``reply(str)``.

When the script is exhausted it answers ``"(script exhausted)"``. Every request body is kept
in ``.requests`` (parsed JSON; headers in ``.headers``), requests without ``model`` and
``messages`` get a 400, and with ``api_key=`` set a request without ``Bearer <api_key>`` gets
a 401; neither consumes a script entry.

    with ScriptedServer([reply("hi")], api_key="k") as server:
        ModelClient(ModelConfig(model="m", base_url=server.base_url, ...))
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Union

EXHAUSTED = "(script exhausted)"
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


@dataclass
class ScriptedError:
    status: int
    message: str | None = None
    retry_after: str | float | None = None
    delay: float = 0.0


Entry = Union[ScriptedReply, ScriptedError, str, Callable[[list], Any]]


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None) -> ToolCallSpec:
    return ToolCallSpec(name=name, arguments={} if arguments is None else arguments, id=id)


def reply(content: str | None = None, tool_calls: Iterable[ToolCallSpec | tuple | dict] = (), *,
          prompt_tokens: int = 10, completion_tokens: int = 5, finish_reason: str | None = None,
          delay: float = 0.0) -> ScriptedReply:
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
                         completion_tokens=completion_tokens, finish_reason=finish_reason, delay=delay)


def error(status: int, message: str | None = None, *, retry_after: str | float | None = None,
          delay: float = 0.0) -> ScriptedError:
    return ScriptedError(status=status, message=message, retry_after=retry_after, delay=delay)


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error"}


class ScriptedServer:
    """A background OpenAI-compatible server replaying ``script``; see the module docstring."""

    def __init__(self, script: Iterable[Entry] = (), api_key: str | None = None, *,
                 models: Iterable[str] = ("test-model",)) -> None:
        self.script: list[Entry] = list(script)
        self.api_key = api_key
        self.models = list(models)
        #: bodies of every request received (parsed JSON, or the raw text when not JSON)
        self.requests: list[Any] = []
        #: headers of every request, in the same order (lower-cased names)
        self.headers: list[dict[str, str]] = []
        #: (path, status) of every answer, in order (recorded as the answer starts)
        self.answers: list[tuple[str, int]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._served = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
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


def _completion(model: str, entry: ScriptedReply, number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": entry.content}
    if entry.tool_calls:
        message["tool_calls"] = [
            {"id": call.id or f"call_{number}_{i}", "type": "function",
             "function": {"name": call.name, "arguments": call.raw_arguments()}}
            for i, call in enumerate(entry.tool_calls)
        ]
    finish = entry.finish_reason or ("tool_calls" if entry.tool_calls else "stop")
    return {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": entry.prompt_tokens, "completion_tokens": entry.completion_tokens,
                  "total_tokens": entry.prompt_tokens + entry.completion_tokens},
    }


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "server_error"), "param": None,
                      "code": status}}


def _handler_for(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one request per connection, so no stale keep-alive sockets between attempts
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            pass

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
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

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in server.models]})
            else:
                self._send(404, _error_body(404, f"no route GET {self.path}"))

        def do_POST(self) -> None:  # noqa: N802
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
            server._record(body, {k.lower(): v for k, v in self.headers.items()})
            if server.api_key is not None and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                self._send(401, _error_body(401, "Incorrect API key provided."))
                return
            if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not body["model"] \
                    or not isinstance(body.get("messages"), list):
                self._send(400, _error_body(400, "a chat completion request needs 'model' and 'messages'"))
                return
            entry = server._next_entry()
            number = len(server.requests)
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
                self._send(200, _completion(body["model"], entry, number))
            else:
                self._send(500, _error_body(500, f"bad script entry {entry!r}"))

    return Handler
