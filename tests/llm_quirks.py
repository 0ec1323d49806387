"""The ways real servers differ, for the scripted server (``tests/llm_server.py``): each
quirk answers as the server it names does, with its status code and its exact message (as
read in the server's source, or in error bodies users quoted from hosted APIs).

Set them as keyword arguments of ``ScriptedServer`` (``Quirks`` fields):

- ``tool_parser``: True; False answers a request with tools as vLLM started without
  ``--enable-auto-tool-choice --tool-call-parser`` (400); ``"text"`` as SGLang without
  ``--tool-call-parser``: the call comes back as ``<tool_call>`` text in the content.
- ``jinja=False``: llama.cpp's server with ``--no-jinja`` (500).
- ``tool_endpoints=False``: a router with no provider for the model that takes tools
  (OpenRouter's 404).
- ``context_limit=N`` with ``context_style``: vllm, sglang, llamacpp, gemini or together.
- ``thinking``: a reasoning API that needs the reasoning of earlier tool-call turns back:
  ``"deepseek"``, ``"kimi"`` (``reasoning_content``), ``"gemini"`` (the first tool call's
  ``extra_content.google.thought_signature``, which its replies carry).
- ``strict_history=True``: SGLang 0.5's 400 for tool-call arguments in the history that
  are not JSON.
- ``reasoning_model=True``: OpenAI's o-series: 400 for a temperature other than 1 and for
  ``max_tokens``.
- ``role_order="mistral"``: Mistral's API: 400 for a ``user`` message right after ``tool``.
- ``usage=False``: completions without ``usage``; ``rate_limit=p``: a 429 for about that
  share of requests, evenly spread (``retry_after`` in its header when set; ``"mixed"``: every other one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: What vLLM and llama.cpp's server answer to a request with tools when they were started
#: without tool-call support.
VLLM_NO_TOOL_PARSER = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
LLAMACPP_NO_JINJA = "tools param requires --jinja flag"
ROUTER_NO_TOOLS = ("No endpoints found that support tool use. To learn more about provider routing, visit: "
                   "https://openrouter.ai/docs/provider-routing")
DEEPSEEK_NO_REASONING = "The `reasoning_content` in the thinking mode must be passed back to the API."
KIMI_NO_REASONING = "thinking is enabled but reasoning_content is missing in assistant tool call message at index {i}"
GEMINI_NO_SIGNATURE = ("Function call is missing a thought_signature in functionCall parts. This is required for "
                       "tools to work correctly, and missing thought_signature may lead to degraded model "
                       "performance. Additional data, function call `default_api:{name}` , position {i}. Please "
                       "refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.")
SGLANG_BAD_ARGUMENTS = "Assistant tool call function.arguments must be valid JSON."
OPENAI_TEMPERATURE = ("Unsupported value: 'temperature' does not support {value} with this model. Only the default "
                      "(1) value is supported.")
OPENAI_MAX_TOKENS = ("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                     "'max_completion_tokens' instead.")
MISTRAL_ROLE_ORDER = "Unexpected role 'user' after role 'tool'"
RATE_LIMITED = ("Rate limit reached for requests per min (RPM): Limit 60, Used 60, Requested 1. Please try again "
                "in 1s.")
THOUGHT_SIGNATURE = "CrICAdHtim8scripted"

OVERFLOW = {
    "vllm": "This model's maximum context length is {limit} tokens. However, you requested {tokens} tokens in the "
            "messages, Please reduce the length of the messages.",
    "sglang": "The input ({tokens} tokens) is longer than the model's context length ({limit} tokens).",
    "together": "The input ({tokens} tokens) is longer than the model's context length ({limit} tokens).",
    "llamacpp": "request ({tokens} tokens) exceeds the available context size ({limit} tokens), try increasing it",
    "gemini": "The input token count ({tokens}) exceeds the maximum number of tokens allowed ({limit}).",
}


@dataclass
class Quirks:
    tool_parser: bool | str = True
    jinja: bool = True
    tool_endpoints: bool = True
    context_limit: int | None = None
    context_style: str = "vllm"
    thinking: str | None = None
    strict_history: bool = False
    reasoning_model: bool = False
    role_order: str | None = None
    usage: bool = True
    rate_limit: float = 0.0
    retry_after: str | None = None

    def __post_init__(self) -> None:
        self.asked = self.limited = 0


@dataclass
class Refusal:
    """An error answer: its status, its JSON body and headers."""

    status: int
    body: Any
    headers: dict[str, str] | None = None


def openai_error(status: int, message: str, type_: str = "invalid_request_error", *, param: str | None = None,
                 code: Any = None) -> Refusal:
    return Refusal(status, {"error": {"message": message, "type": type_, "param": param, "code": code}})


def flat_error(status: int, message: str, type_: str, code: Any) -> Refusal:
    """The unwrapped error body of SGLang and Mistral's API."""
    return Refusal(status, {"object": "error", "message": message, "type": type_, "param": None, "code": code})


def refusal(quirks: Quirks, body: dict[str, Any]) -> Refusal | None:
    """The error a server with ``quirks`` answers ``body`` with, if any."""
    tools = bool(body.get("tools"))
    if tools and quirks.tool_parser is False:
        return openai_error(400, VLLM_NO_TOOL_PARSER, "BadRequestError", code=400)
    if tools and not quirks.jinja:
        return Refusal(500, {"error": {"code": 500, "message": LLAMACPP_NO_JINJA, "type": "server_error"}})
    if tools and not quirks.tool_endpoints:
        return Refusal(404, {"error": {"message": ROUTER_NO_TOOLS, "code": 404}})
    for check in (_rate_limited, _reasoning_model, _role_order, _history, _thinking, _context):
        found = check(quirks, body)
        if found is not None:
            return found
    return None


def _rate_limited(quirks: Quirks, body: dict[str, Any]) -> Refusal | None:
    quirks.asked += 1
    if int(quirks.asked * quirks.rate_limit) == int((quirks.asked - 1) * quirks.rate_limit):
        return None  # spread evenly: with 0.25, every fourth request is refused
    refused = openai_error(429, RATE_LIMITED, "requests", code="rate_limit_exceeded")
    quirks.limited += 1
    after = quirks.retry_after
    if after == "mixed":  # every other 429 says when to come back
        after = "1" if quirks.limited % 2 else None
    refused.headers = {"Retry-After": after} if after is not None else None
    return refused


def _reasoning_model(quirks: Quirks, body: dict[str, Any]) -> Refusal | None:
    if not quirks.reasoning_model:
        return None
    if "temperature" in body and body["temperature"] != 1:
        return openai_error(400, OPENAI_TEMPERATURE.format(value=body["temperature"]), param="temperature",
                            code="unsupported_value")
    if "max_tokens" in body:
        return openai_error(400, OPENAI_MAX_TOKENS, param="max_tokens", code="unsupported_parameter")
    return None


def _role_order(quirks: Quirks, body: dict[str, Any]) -> Refusal | None:
    roles = [m.get("role") for m in body["messages"]]
    if quirks.role_order == "mistral" and any(
        a == "tool" and b == "user" for a, b in zip(roles, roles[1:], strict=False)
    ):
        return flat_error(400, MISTRAL_ROLE_ORDER, "invalid_request_message_order", "3230")
    return None


def _history_calls(body: dict[str, Any]):
    """(message index, call index, call) of every tool call of the assistant turns sent."""
    for i, message in enumerate(body["messages"]):
        if message.get("role") == "assistant":
            for j, call in enumerate(message.get("tool_calls") or []):
                yield i, j, call


def _history(quirks: Quirks, body: dict[str, Any]) -> Refusal | None:
    if not quirks.strict_history:
        return None
    for _, _, call in _history_calls(body):
        try:
            json.loads((call.get("function") or {}).get("arguments") or "")
        except ValueError:
            return flat_error(400, SGLANG_BAD_ARGUMENTS, "BadRequest", 400)
    return None


def _thinking(quirks: Quirks, body: dict[str, Any]) -> Refusal | None:
    for i, j, call in _history_calls(body):
        message = body["messages"][i]
        if quirks.thinking == "deepseek" and not message.get("reasoning_content"):
            return openai_error(400, DEEPSEEK_NO_REASONING, code="invalid_request_error")
        if quirks.thinking == "kimi" and not message.get("reasoning_content"):
            return Refusal(400, {"error": {"message": KIMI_NO_REASONING.format(i=i), "type": "invalid_request_error"}})
        signature = ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")
        if quirks.thinking == "gemini" and j == 0 and signature != THOUGHT_SIGNATURE:
            name = (call.get("function") or {}).get("name")
            return Refusal(400, [{"error": {"code": 400, "message": GEMINI_NO_SIGNATURE.format(name=name, i=i),
                                            "status": "INVALID_ARGUMENT"}}])
    return None


def _context(quirks: Quirks, body: dict[str, Any]) -> Refusal | None:
    if quirks.context_limit is None:
        return None
    tokens = len(json.dumps(body["messages"], ensure_ascii=False)) // 4
    if tokens <= quirks.context_limit:
        return None
    message = OVERFLOW[quirks.context_style].format(limit=quirks.context_limit, tokens=tokens)
    if quirks.context_style == "sglang":
        return flat_error(400, message, "BadRequestError", 400)
    if quirks.context_style == "gemini":
        return Refusal(400, [{"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}])
    if quirks.context_style == "llamacpp":
        return Refusal(400, {"error": {"code": 400, "message": message, "type": "exceed_context_size_error",
                                       "n_prompt_tokens": tokens, "n_ctx": quirks.context_limit}})
    return openai_error(400, message, "BadRequestError", code=400)


def shape_message(quirks: Quirks, message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message as the server sends it: tool calls as ``<tool_call>`` text
    (SGLang without a parser), the first call with Gemini's thought signature."""
    calls = message.get("tool_calls") or []
    if calls and quirks.tool_parser == "text":
        text = "".join(f'<tool_call>\n{{"name": {json.dumps(c["function"]["name"])}, "arguments": '
                       f'{c["function"]["arguments"] or "{}"}}}\n</tool_call>' for c in calls)
        return {**{k: v for k, v in message.items() if k != "tool_calls"}, "content": (message.get("content") or "")
                + text, "tool_calls": None}
    if calls and quirks.thinking == "gemini":
        calls[0]["extra_content"] = {"google": {"thought_signature": THOUGHT_SIGNATURE}}
    return message
