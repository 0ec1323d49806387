"""Keeping a conversation within the model's context: older tool observations are
condensed (the system prompt, the task and the recent turns stay whole), with a note to
the model saying so. Sizes are estimated from the text (no tokenizer)."""

from __future__ import annotations

from typing import Any

from cligym.agents.answers import estimate_tokens

#: Messages at the end that are never condensed (the last few turns and their results).
KEEP_RECENT = 6
#: How much of a condensed observation stays (its head: commands print what matters first).
KEPT_CHARS = 200
#: What replaces the rest of a condensed observation: the model learns what happened.
NOTE = ("[cligym: {n} more characters of this output were left out to fit the model's context; "
        "run the command again if you need them]")


def condense(messages: list[dict[str, Any]], budget: int, shortened: list[tuple[str, int]] | None = None) -> bool:
    """Shorten tool observations (in place) until the conversation's estimate fits
    ``budget`` tokens; True when it fits. The oldest go first; the last ``KEEP_RECENT``
    messages only when that is not enough. The system prompt and the task stay whole, and
    messages are never removed or inserted: a tool result must follow the call it answers.
    Each one shortened is added to ``shortened`` as (its tool_call_id, characters kept)."""
    if estimate_tokens(messages) <= budget:
        return True
    recent = max(2, len(messages) - KEEP_RECENT)
    for i in [*range(2, recent), *range(recent, len(messages))]:
        message = messages[i]
        text = message.get("content")
        if (message.get("role") == "tool" and isinstance(text, str) and len(text) > KEPT_CHARS + len(NOTE)
                and not text[KEPT_CHARS:].startswith("\n" + NOTE[:20])):  # not shortened already
            message["content"] = text[:KEPT_CHARS] + "\n" + NOTE.format(n=len(text) - KEPT_CHARS)
            if shortened is not None:
                shortened.append((str(message.get("tool_call_id", "")), KEPT_CHARS))
            if estimate_tokens(messages) <= budget:
                return True
    return False
