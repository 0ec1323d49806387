"""Pytest fixtures around the scripted LLM server (``tests/llm_server.py``).

Use it with ``from tests.llm_fixtures import scripted_server`` in a test module (or list
``"tests.llm_fixtures"`` in the root conftest's ``pytest_plugins``):

    def test_agent(scripted_server):
        server = scripted_server([reply(tool_calls=[tool_call("finish", {"summary": "ok"})])])
        client = ModelClient(ModelConfig(model="test-model", base_url=server.base_url))
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

import pytest

from tests.llm_server import Entry, ScriptedServer


@pytest.fixture
def scripted_server() -> Iterator[Callable[..., ScriptedServer]]:
    """A factory: ``scripted_server(script, api_key=None)`` starts a server, closed after the test."""
    servers: list[ScriptedServer] = []

    def start(script: Iterable[Entry] = (), api_key: str | None = None, **kwargs) -> ScriptedServer:
        server = ScriptedServer(script, api_key=api_key, **kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
