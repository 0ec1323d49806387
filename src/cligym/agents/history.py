"""What goes back to the model: a reply as the assistant message of the conversation, the
conversation as it is sent, and tool calls that came back as text instead of through the
tool-calling interface."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from cligym.agents.answers import Reply

ReasoningHistory = Literal["send-back", "drop"]


def assistant_message(reply: Reply, reasoning: ReasoningHistory = "send-back") -> dict[str, Any]:
    """The assistant message that stands for ``reply`` in the conversation. With ``send-back``
    the reasoning goes back in the field it came in (``reasoning_content`` for DeepSeek and
    Kimi, ``reasoning`` for vLLM's gpt-oss) or as its ``<think>`` text, with the provider's
    extras (OpenRouter's ``reasoning_details``). A tool call's own extras (Gemini's
    ``thought_signature``) go back either way: the server needs them to take the call.
    Arguments that are not a JSON object go back as ``{}``: servers that parse the history
    (SGLang) would refuse every later request otherwise."""
    send_back = reasoning == "send-back" and bool(reply.reasoning)
    content = reply.content
    if send_back and reply.reasoning_field is None and reply.content_as_sent:
        content = reply.content_as_sent  # the reasoning came as <think> text: it goes back so
    message: dict[str, Any] = {"role": "assistant", "content": content or ""}
    if send_back and reply.reasoning_field is not None:
        message[reply.reasoning_field] = reply.reasoning
    if reasoning == "send-back":
        message.update(reply.extras)
    if reply.tool_calls:
        message["tool_calls"] = [
            {**call.extras, "id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": call.raw_arguments if call.error is None else "{}"}}
            for call in reply.tool_calls
        ]
    return message


def wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as sent: a ``user`` message after ``tool`` messages joined to the
    last of them, since Mistral's API and vLLM's Mistral tokenizer refuse a ``user`` turn
    after a ``tool`` turn (copies; ``messages`` is not changed)."""
    sent: list[dict[str, Any]] = []
    for message in messages:
        previous = sent[-1] if sent else None
        if (message.get("role") == "user" and previous is not None and previous.get("role") == "tool"
                and isinstance(message.get("content"), str) and isinstance(previous.get("content"), str)):
            sent[-1] = {**previous, "content": f"{previous['content']}\n\n[{message['content']}]"}
            continue
        sent.append(message)
    return sent


_TEXT_CALL = re.compile(
    r"<tool_call>|<\|tool_call\|>|<\|tool_calls_section_begin\|>|<｜tool▁calls▁begin｜>|\[TOOL_CALLS\]|"
    r"<function=|<\|python_tag\|>|<tool_use>",
    re.IGNORECASE)
_BARE_CALL = re.compile(r'\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"(?:arguments|parameters)"\s*:')


def text_tool_call(content: str) -> str | None:
    """A short excerpt of the tool call written in ``content`` as text, or None."""
    found = _TEXT_CALL.search(content or "") or _BARE_CALL.search(content or "")
    if found is None:
        return None
    excerpt = " ".join(content[found.start():found.start() + 160].split())
    return excerpt + ("..." if len(content) - found.start() > 160 else "")


def argument_error(raw: str, error: str) -> str:
    """The tool's answer to a call whose arguments could not be read: what came, what was wrong."""
    shown = raw if len(raw) <= 200 else raw[:197] + "..."
    return f"error: the call was not run: {error}. You sent: {json.dumps(shown)}"
