"""Presets for the model config: ``preset = "<name>"`` in a ``--model-config``
TOML file (or ``--model-preset``) sets these values; keys the file gives win.

They are plain data. What each answers (see docs/servers.md):

- ``vllm``, ``sglang``, ``llama.cpp``: the defaults; the reasoning of earlier turns goes back
  (vLLM hands gpt-oss its earlier analysis that way; Qwen3-style chat templates keep only
  what they need). The servers' own flags for tool calls are named in the README.
- ``openai-reasoning``: OpenAI's o-series and GPT-5 models refuse a temperature other than
  their default and the ``max_tokens`` field; they return no reasoning to send back.
- ``deepseek``: thinking mode with tools answers 400 unless each earlier turn's
  ``reasoning_content`` comes back; its context is 128K tokens.
- ``mistral``: Mistral's API refuses fields it does not know (``seed``; it calls it
  ``random_seed``) and returns no reasoning field to send back. The role order it requires
  (no ``user`` right after ``tool``) is kept for every server.
"""

from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    "vllm": {},
    "sglang": {},
    "llama.cpp": {},
    "openai-reasoning": {"omit": ["temperature"], "max_tokens_field": "max_completion_tokens", "reasoning": "drop"},
    "deepseek": {"reasoning": "send-back", "context_tokens": 100_000},
    "mistral": {"omit": ["seed"], "reasoning": "drop"},
}
