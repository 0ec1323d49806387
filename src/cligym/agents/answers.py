"""What a chat-completions endpoint answers: the records the model client returns
(``Reply``, ``ToolCall``, ``Usage``) and the reading of a raw HTTP answer into a ``Reply``,
which never trusts the body."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from pydantic import BaseModel, Field

#: Longest excerpt of a body quoted in a description.
EXCERPT = 120


class Failed(Exception):
    """One failed attempt of a model call, which may be retried: ``reason`` (one line), the
    server's ``delay`` (Retry-After) and ``kind``: ``timeout``, ``unreachable``, ``broken``,
    ``status``, or for an answer that is not a chat completion ``html`` (a web page: the URL
    is not an API at all), ``error`` (an error object sent with a success status: the server
    speaks the API but refused this request) or ``garbage``."""

    def __init__(self, reason: str, kind: str = "garbage", *, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.kind, self.delay = reason, kind, delay


# --------------------------------------------------------------------------- records


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ToolCall(BaseModel):
    """One tool call. Exactly one of ``arguments`` (parsed) and ``error`` (why not) is set."""

    id: str
    name: str
    raw_arguments: str = ""
    arguments: dict[str, Any] | None = None
    error: str | None = None
    #: the call's other fields as the server sent them (e.g. Gemini's ``extra_content`` with
    #: its ``thought_signature``): sent back with the call in the conversation
    extras: dict[str, Any] = Field(default_factory=dict)


class Reply(BaseModel):
    content: str = ""  # without the model's reasoning (``<think>`` blocks are moved out)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    #: the model's reasoning: a ``reasoning_content``/``reasoning`` field, or ``<think>`` text
    reasoning: str = ""
    #: the server sent no usage: ``usage`` is an estimate from the text's length
    usage_estimated: bool = False
    #: the field the reasoning came in (``reasoning_content``, ``reasoning``); None: in
    #: ``<think>`` text of the content, or no reasoning
    reasoning_field: str | None = None
    #: the content as the server sent it (``<think>`` blocks included)
    content_as_sent: str = ""
    #: the message's other non-null fields (e.g. OpenRouter's ``reasoning_details``)
    extras: dict[str, Any] = Field(default_factory=dict)
    #: prompt tokens the server served from its cache (``prompt_tokens_details.cached_tokens``)
    cached_tokens: int | None = None

    @property
    def cut_off(self) -> bool:
        """The reply stopped at the completion-token limit (finish_reason ``length``)."""
        return self.finish_reason == "length"


#: Characters per token for estimates (no tokenizer): about 4 for English text and code.
CHARS_PER_TOKEN = 4


def chars_to_tokens(chars: int) -> int:
    """A token count estimated from a text's length (at least 1)."""
    return max(1, -(-chars // CHARS_PER_TOKEN))


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """A conversation's size in tokens, estimated from its JSON's length."""
    return chars_to_tokens(len(json.dumps(messages, ensure_ascii=False)))


def estimate_usage(messages: list[dict[str, Any]], reply: Reply) -> Usage:
    """Token counts for a reply whose server sent none, from the text's length."""
    completion = len(reply.content) + len(reply.reasoning) + sum(len(c.name) + len(c.raw_arguments)
                                                                 for c in reply.tool_calls)
    return Usage(prompt_tokens=estimate_tokens(messages), completion_tokens=chars_to_tokens(completion))


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


# --------------------------------------------------------------------------- reading an answer


def read_completion(body: bytes, content_type: str = "", *, call_number: int = 0) -> Reply:
    """The ``Reply`` in the HTTP body of a 2xx answer. ``Failed`` describes in a few words
    what came instead (an HTML page, plain text, invalid or cut-off JSON, an event stream,
    JSON of another shape, a 200 carrying an error object), e.g. ``an HTML page ("502 Bad
    Gateway")``. Malformed tool-call arguments are reported in ``ToolCall.error``, for the
    model to correct. ``call_number`` names tool calls sent without an id (``call_<n>_<i>``)."""
    data = _json_object(body, content_type)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        if error and "choices" not in data:
            message = error.get("message") if isinstance(error, dict) else error
            raise Failed(f"an error object: {_excerpt(str(message or error))!r}", "error")
        raise Failed(_no_choices(data, choices))
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise Failed(f"JSON whose first choice has no message ({_excerpt(json.dumps(choice))})")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise Failed(f"JSON whose tool_calls is not a list ({_excerpt(json.dumps(calls))})")
    finish = choice.get("finish_reason")
    sent = _content(message.get("content"))
    content, thought = split_reasoning(sent)
    name = next((k for k in REASONING_FIELDS if isinstance(message.get(k), str) and message[k].strip()), None)
    field = message[name].strip() if name else ""
    return Reply(content=content, reasoning="\n\n".join(t for t in (field, thought) if t), reasoning_field=name,
                 content_as_sent=sent, extras=_extras(message, MESSAGE_FIELDS),
                 tool_calls=_unique_ids([_tool_call(call, f"call_{call_number}_{i}") for i, call in enumerate(calls)]),
                 finish_reason=finish if isinstance(finish, str) else None, usage=_usage(data.get("usage")),
                 usage_estimated=not isinstance(data.get("usage"), dict), cached_tokens=_cached(data.get("usage")))


def last_json_object(text: str, key: str | None = None) -> dict[str, Any] | None:
    """The last complete JSON object in ``text`` outside ``<think>`` reasoning (with ``key``:
    the last one holding it, else the last at all); None when there is none. A model may
    draft an answer and then correct it: the later object is the answer."""
    text = split_reasoning(text)[0]
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    position = 0
    for match in re.finditer(r"\{", text):
        if match.start() < position:
            continue  # inside an object already read
        try:
            value, position = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    keyed = [value for value in found if key is not None and key in value]
    return (keyed or found or [None])[-1]


#: Where servers put a reasoning model's thoughts: vLLM/SGLang/DeepSeek, and others.
REASONING_FIELDS = ("reasoning_content", "reasoning")
#: A message's fields read into a Reply, and those of a response only (never sent back):
#: the rest are a provider's extras, kept in ``Reply.extras``.
MESSAGE_FIELDS = frozenset({"role", "content", "tool_calls", *REASONING_FIELDS, "refusal", "annotations", "audio",
                            "function_call", "name"})
CALL_FIELDS = frozenset({"id", "type", "function", "custom", "index"})


def _extras(fields: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The non-null fields of ``fields`` outside ``known``."""
    return {k: v for k, v in fields.items() if k not in known and v is not None and v != {} and v != []}


def _cached(usage: Any) -> int | None:
    """``usage.prompt_tokens_details.cached_tokens`` (OpenAI, vLLM, SGLang), if sent."""
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    number = details.get("cached_tokens") if isinstance(details, dict) else None
    return int(number) if isinstance(number, int) and not isinstance(number, bool) and number >= 0 else None
_THINK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)


def split_reasoning(content: str) -> tuple[str, str]:
    """(the content without ``<think>...</think>`` blocks, their text). A server without a
    reasoning parser leaves them in the content; an unclosed block runs to the end, and a
    lone ``</think>`` (the opening tag was in the prompt template) ends reasoning that began
    the content."""
    thoughts = [m.strip() for m in _THINK.findall(content)]
    rest = _THINK.sub("", content)
    if "</think>" in rest.lower() and not thoughts:
        head, _, rest = re.split(r"(</think>)", rest, maxsplit=1, flags=re.IGNORECASE)
        thoughts = [head.strip()]
    return rest.strip() if thoughts else content, "\n\n".join(t for t in thoughts if t)


def _unique_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Tool calls with distinct ids: a later call reusing an id (some servers number every
    reply's calls from 0, or send one id twice) gets a suffix."""
    seen: set[str] = set()
    for n, call in enumerate(calls):
        while call.id in seen:
            call.id = f"{call.id}_{n}"
        seen.add(call.id)
    return calls


def describe_text(text: str, content_type: str = "") -> tuple[str, bool]:
    """(a short description of a body that is not the JSON expected, whether it is a web page)."""
    stripped = text.strip()
    if not stripped:
        return "an empty body", False
    if _is_html(stripped, content_type):
        title = _html_title(stripped)
        return "an HTML page" + (f" ({title!r})" if title else ""), True
    if "event-stream" in content_type or stripped.startswith(("data:", "event:")):
        return "an event stream (streamed chunks, not one completion)", False
    kind = f" ({content_type})" if content_type and "json" not in content_type else ""
    return f"text that is not JSON{kind}: {_excerpt(stripped)!r}", False


def _json_object(body: bytes, content_type: str) -> dict[str, Any]:
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Failed(f"{len(body)} bytes that are not UTF-8 text") from None
    stripped = text.strip()
    if not stripped:
        raise Failed("an empty body")
    try:
        data = json.loads(text)
    except RecursionError:
        raise Failed("JSON nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        if stripped[:1] in "{[" and not _is_html(stripped, content_type):
            if exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string"):
                raise Failed(f"JSON cut off after {len(body)} bytes: '...{_excerpt(stripped[-60:])}'") from None
            raise Failed(f"invalid JSON ({exc.msg} at position {exc.pos}): {_excerpt(stripped, 80)!r}") from None
        what, is_html = describe_text(text, content_type)
        raise Failed(what, "html" if is_html else "garbage") from None
    if not isinstance(data, dict):
        raise Failed(f"JSON that is not an object but {_json_kind(data)}: {_excerpt(json.dumps(data))!r}")
    return data


def _no_choices(data: dict[str, Any], choices: Any) -> str:
    if "choices" not in data:
        keys = ", ".join(sorted(map(str, data))[:8]) or "none"
        return f"JSON without choices (keys: {_excerpt(keys)})"
    return f"JSON with no choices (choices: {_excerpt(json.dumps(choices))})"


def _content(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text") or "" for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    raise Failed(f"JSON whose message content is {_json_kind(value)}, not text")


def _tool_call(call: Any, fallback_id: str) -> ToolCall:
    if not isinstance(call, dict):
        raise Failed(f"JSON with a tool call that is {_json_kind(call)}, not an object")
    function = call.get("function")
    if not isinstance(function, dict):  # a custom (non-function) tool call: its input is the raw text
        function = call.get("custom") if isinstance(call.get("custom"), dict) else {}
        function = {"name": function.get("name"), "arguments": function.get("input")}
    name, raw = function.get("name"), function.get("arguments")
    raw = raw if isinstance(raw, str) else "" if raw is None else json.dumps(raw)
    arguments, error = parse_tool_arguments(raw)
    call_id = call.get("id")
    return ToolCall(id=call_id if isinstance(call_id, str) and call_id else fallback_id,
                    name=name if isinstance(name, str) else "", raw_arguments=raw, arguments=arguments, error=error,
                    extras=_extras(call, CALL_FIELDS))


def _usage(value: Any) -> Usage:
    if not isinstance(value, dict):
        return Usage()

    def count(key: str) -> int:
        number = value.get(key)
        return int(number) if isinstance(number, (int, float)) and not isinstance(number, bool) and number > 0 else 0

    return Usage(prompt_tokens=count("prompt_tokens"), completion_tokens=count("completion_tokens"))


def _is_html(text: str, content_type: str) -> bool:
    if "html" in content_type:
        return True
    head = text[:200].lower()
    return head.startswith(("<!doctype html", "<html", "<head", "<body", "<?xml")) or "<html" in head


def _html_title(text: str) -> str:
    for pattern in (r"<title[^>]*>(.*?)</title>", r"<h1[^>]*>(.*?)</h1>"):
        found = re.search(pattern, text, re.IGNORECASE | re.DOTALL)
        if found:
            title = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())
            if title:
                return _excerpt(title, 80)
    return ""


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {list: "a list", str: "a string", bool: "a boolean", dict: "an object"}.get(type(value), "a number")


def one_line(value: object, limit: int = 240) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _excerpt(text: str, limit: int = EXCERPT) -> str:
    return one_line(text, limit)
