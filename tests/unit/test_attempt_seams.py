"""The seams of the inversion stage: the engine it needs (``Engine``, which ``Runtime``
is), the model client it needs (``ChatClient``, which ``ModelClient`` is), and the one
kind of error that stops a run (``Fatal``)."""

from __future__ import annotations

import inspect

from cligym.agents.client import ChatClient, ModelClient
from cligym.agents.errors import (
    ModelBadAnswer,
    ModelContextOverflow,
    ModelError,
    ModelNotChatEndpoint,
    ModelUnreachable,
)
from cligym.errors import BuildFailed, CligymError, EngineUnavailable, Fatal
from cligym.runtime import Runtime
from cligym.runtime.protocol import Engine


def _members(protocol: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(getattr(protocol, name)) for name in dir(protocol)
            if not name.startswith("_") and callable(getattr(protocol, name))}


def _conforms(concrete: type, protocol: type) -> None:
    """Every method of ``protocol`` is on ``concrete`` and takes the protocol's parameters."""
    members = _members(protocol)
    assert members
    for name, wanted in members.items():
        have = inspect.signature(getattr(concrete, name)).parameters
        for parameter in wanted.parameters.values():
            assert parameter.name in have, f"{concrete.__name__}.{name} lacks {parameter.name}"
            assert have[parameter.name].kind == parameter.kind, f"{concrete.__name__}.{name}({parameter.name})"


def test_the_runtime_is_an_engine_and_the_model_client_a_chat_client():
    _conforms(Runtime, Engine)
    _conforms(ModelClient, ChatClient)
    assert "config" in ChatClient.__annotations__


def test_fatal_errors_are_the_engine_and_the_endpoint_never_one_request():
    for error in (EngineUnavailable("x"), ModelUnreachable("x"), ModelNotChatEndpoint("x")):
        assert isinstance(error, Fatal) and error.fatal
    for error in (CligymError("x"), BuildFailed("x"), ModelError("x"), ModelBadAnswer("x"), ModelContextOverflow("x")):
        assert not isinstance(error, Fatal) and not error.fatal
    assert EngineUnavailable("x").exit_code == 3 and ModelNotChatEndpoint("x").exit_code == 2
