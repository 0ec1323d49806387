"""The model client's errors (``cligym.agents.client``), one line each, and how a server's
error message is recognised as a known limitation (no tool calling, context too long)."""

from __future__ import annotations

import re

from cligym.errors import CligymError



class ModelError(CligymError):
    """The model endpoint could not give a completion (base of the errors below).

    A plain ModelError concerns one request (e.g. a 400 for a conversation longer than the
    model's context): the run may go on. The subclasses with ``fatal`` set concern the
    endpoint itself, so every later request would fail too: the run stops.
    """

    fatal = False


class ModelUnreachable(ModelError):
    """Nothing answers at the endpoint's address (after the retries)."""

    fatal = True

    exit_code = 3


class ModelAuthError(ModelError):
    """The endpoint refused the API key (HTTP 401 or 403)."""

    fatal = True

    exit_code = 2


class ModelNotFound(ModelError):
    """The endpoint does not know the model, or the base URL is wrong (HTTP 404)."""

    fatal = True

    exit_code = 2


class ModelRetriesExhausted(ModelError):
    """Rate limits, server errors, broken connections or timeouts outlasted every retry."""

    fatal = True


class ModelBadAnswer(ModelError):
    """The endpoint answered, but not with a chat completion (an HTML page, text, invalid or
    cut-off JSON, JSON of another shape), on every attempt of one call. Not fatal alone."""


class ModelNotChatEndpoint(ModelBadAnswer):
    """The endpoint has given no completion yet and answers with a web page (at once) or with
    no chat completion on every attempt: the base URL is not an OpenAI-compatible API."""

    fatal = True

    exit_code = 2


class ModelBroken(ModelError):
    """``max_failed_calls`` calls in a row ended without a completion (garbage, timeouts,
    refusals): the endpoint is broken, so the run stops instead of failing every attempt."""

    fatal = True


class ModelDeadline(ModelError):
    """The caller's deadline came before a completion. Not fatal: the caller's time is up."""


class ModelToolsUnsupported(ModelError):
    """The server cannot do tool calls as it runs (vLLM without a tool-call parser,
    llama.cpp without ``--jinja``): every agent request would fail the same way."""

    fatal = True

    exit_code = 2


class ModelContextOverflow(ModelError):
    """The conversation is longer than the model's context (this request only: a shorter
    conversation may go through)."""


#: What servers say when they cannot do tool calls: vLLM ("auto" tool choice requires
#: --enable-auto-tool-choice and --tool-call-parser to be set), llama.cpp ("tools param
#: requires --jinja flag"), and the generic refusals of others.
_NO_TOOLS = re.compile(r"enable-auto-tool-choice|tool-call-parser|--jinja|tools? (?:are|is) not supported|"
                       r"does not support (?:tools|tool|function)", re.IGNORECASE)
#: What servers say when a prompt exceeds the context: vLLM/OpenAI ("maximum context
#: length is N tokens"), llama.cpp ("exceeds the available context size"), others.
_TOO_LONG = re.compile(r"maximum context length|context[_ ]length[_ ]exceeded|exceeds? the (?:available )?context|"
                       r"context size|too many tokens|prompt is too long", re.IGNORECASE)

SERVER_FLAGS = ("start vLLM with --enable-auto-tool-choice --tool-call-parser <parser for the model> "
                "(e.g. hermes, llama3_json, mistral), llama.cpp's server with --jinja; a hosted API must "
                "support the tools parameter")


def tools_unsupported(message: str) -> bool:
    return bool(_NO_TOOLS.search(message or ""))


def context_overflow(message: str) -> bool:
    return bool(_TOO_LONG.search(message or ""))
