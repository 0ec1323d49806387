"""The model client's errors (``cligym.agents.client``), one line each, and how a server's
error message is recognised as a known limitation (no tool calling, context too long)."""

from __future__ import annotations

import re

from cligym.errors import CligymError, Fatal


class ModelError(CligymError):
    """The model endpoint could not give a completion. A plain ModelError concerns one
    request: the run may go on. The ``Fatal`` subclasses concern the endpoint itself, so
    every later request would fail too: the run stops."""


class ModelUnreachable(ModelError, Fatal):
    """Nothing answers at the endpoint's address (after the retries)."""

    exit_code = 3


class ModelAuthError(ModelError, Fatal):
    """The endpoint refused the API key (HTTP 401 or 403)."""

    exit_code = 2


class ModelNotFound(ModelError, Fatal):
    """The endpoint does not know the model, or the base URL is wrong (HTTP 404)."""

    exit_code = 2


class ModelRetriesExhausted(ModelError, Fatal):
    """Rate limits, server errors, broken connections or timeouts outlasted every retry."""


class ModelBadAnswer(ModelError):
    """The endpoint answered, but not with a chat completion (an HTML page, text, invalid or
    cut-off JSON, JSON of another shape), on every attempt of one call. Not fatal alone."""


class ModelNotChatEndpoint(ModelBadAnswer, Fatal):
    """The endpoint has given no completion yet and answers with a web page (at once) or with
    no chat completion on every attempt: the base URL is not an OpenAI-compatible API."""

    exit_code = 2


class ModelBroken(ModelError, Fatal):
    """``max_failed_calls`` calls in a row ended without a completion (garbage, timeouts,
    refusals): the endpoint is broken, so the run stops instead of failing every attempt."""


class ModelDeadline(ModelError):
    """The caller's deadline came before a completion. Not fatal: the caller's time is up."""


class ModelToolsUnsupported(ModelError, Fatal):
    """The server cannot do tool calls as it runs (vLLM without a tool-call parser,
    llama.cpp without ``--jinja``): every agent request would fail the same way."""

    exit_code = 2


class ModelFieldRefused(ModelError, Fatal):
    """The server refuses a request field for this model (OpenAI's reasoning models and
    ``temperature`` or ``max_tokens``): every request would be refused the same way."""

    exit_code = 2


class ModelContextOverflow(ModelError):
    """The conversation is longer than the model's context (this request only: a shorter
    conversation may go through)."""


#: What servers say when they cannot do tool calls: vLLM ("auto" tool choice requires
#: --enable-auto-tool-choice and --tool-call-parser to be set), llama.cpp ("tools param
#: requires --jinja flag"), a router with no provider for the model that takes tools
#: (OpenRouter's 404 "No endpoints found that support tool use"), and others' refusals.
NO_TOOLS = re.compile(r"enable-auto-tool-choice|tool-call-parser|--jinja|tools? (?:are|is) not supported|"
                      r"does not support (?:tools|tool|function)|no endpoints found that support tool",
                      re.IGNORECASE)
#: What servers say when a prompt exceeds the context: vLLM/OpenAI ("maximum context
#: length is N tokens"), SGLang and Together ("The input (N tokens) is longer than the
#: model's context length"), llama.cpp ("exceeds the available context size", "is larger
#: than the max context size"), Gemini ("The input token count (N) exceeds the maximum number
#: of tokens allowed"), TGI ("`inputs` tokens + `max_new_tokens` must be <="), Anthropic
#: ("prompt is too long").
TOO_LONG = re.compile(r"maximum context length|context[_ ]length[_ ]exceeded|exceeds? the (?:available )?context|"
                      r"context size|too many tokens|prompt is too long|longer than the model'?s context length|"
                      r"input token count \(?\d*\)? ?exceeds|max_new_tokens`? must be <=", re.IGNORECASE)
#: OpenAI's refusal of a request field the model does not take: "Unsupported value:
#: 'temperature' does not support 0 with this model", "Unsupported parameter: 'max_tokens' is
#: not supported with this model. Use 'max_completion_tokens' instead."
UNSUPPORTED = re.compile(r"Unsupported (?:value|parameter): '(\w+)'", re.IGNORECASE)
#: What to set in the model config for a refused field.
FIELD_FIXES = {"temperature": 'omit = ["temperature"]', "seed": 'omit = ["seed"]',
               "max_tokens": 'max_tokens_field = "max_completion_tokens"',
               "max_completion_tokens": 'max_tokens_field = "max_tokens"'}

SERVER_FLAGS = ("start vLLM with --enable-auto-tool-choice --tool-call-parser <parser for the model> "
                "(e.g. hermes, llama3_json, mistral), llama.cpp's server with --jinja; a hosted API must "
                "support the tools parameter")
