"""Where and how to call a model: ``ModelConfig``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cligym.agents.history import ReasoningHistory
from cligym.agents.presets import PRESETS
from cligym.agents.transport import one_line
from cligym.errors import BadInput
from cligym.models.io import read_toml

DEFAULT_API_KEY_ENV = "CLIGYM_API_KEY"
#: The key sent when the key variable is unset: local servers (vLLM...) accept anything.
NO_KEY = "EMPTY"


class ModelConfig(BaseModel):
    """How to reach the model and what its server takes. Keys of a ``--model-config`` TOML
    file are these fields; ``preset`` names a preset (``cligym.agents.presets``)
    whose values stand where the file gives none, and values given on the command line win."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    preset: str | None = None
    model: str = ""
    base_url: str = ""
    api_key_env: str = DEFAULT_API_KEY_ENV
    timeout: float = Field(default=300.0, gt=0, description="seconds per attempt, for the whole answer")
    max_retries: int = Field(default=8, ge=0, description="retries after the first attempt")
    temperature: float | None = Field(default=0.0, ge=0, description="0 as in the paper; None: the endpoint's")
    max_tokens: int | None = Field(default=None, gt=0, description="completion tokens per reply (None: the server's)")
    seed: int | None = Field(default=None, description="sampling seed; attempt n of a task sends seed + n")
    omit: list[Literal["temperature", "seed", "max_tokens"]] = Field(
        default_factory=list, description="request fields never sent (OpenAI's reasoning models refuse temperature)")
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        default="max_tokens", description="the field the completion limit goes out as")
    reasoning: ReasoningHistory = Field(default="send-back", description="send-back: earlier turns' reasoning goes "
                                        "back to the model (DeepSeek, Kimi, gpt-oss need it); drop: it does not")
    context_tokens: int = Field(default=100_000, gt=0, description="the conversation's size (estimated tokens) "
                                "above which older tool outputs are shortened")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="more request fields, sent as they are "
                                       "(e.g. top_k, chat_template_kwargs)")
    backoff_base: float = Field(default=1.0, ge=0, description="first back-off delay, doubled per retry")
    backoff_cap: float = Field(default=60.0, ge=0, description="longest back-off delay")
    retry_after_cap: float = Field(default=60.0, ge=0, description="longest wait a Retry-After may ask for")
    max_failed_calls: int = Field(default=3, ge=1, description="calls in a row of one worker without a completion "
                                                               "before the endpoint counts as broken (fatal)")

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("preset") is not None:
            name = data["preset"]
            if name not in PRESETS:
                raise ValueError(f"unknown preset {name!r}; the presets are {', '.join(sorted(PRESETS))}")
            data = {**PRESETS[name], **data}
        return data

    @classmethod
    def load(cls, path: str | Path, **overrides: Any) -> ModelConfig:
        """The config in TOML file ``path``; ``overrides`` that are not None replace its values."""
        path = Path(path)
        data = read_toml(path, "model config")
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())
            raise BadInput(f"model config {path}: {one_line(problems)}") from None

    def sampling(self, episode: int) -> ModelConfig:
        """The config for episode ``episode`` of a task: its seed moved by the episode's
        number, so that k episodes sample k ways and a rerun samples the same ones."""
        return self if self.seed is None or episode == 0 else self.model_copy(update={"seed": self.seed + episode})

    def api_key(self) -> str:
        """The key from ``$api_key_env``, or ``EMPTY`` when that variable is unset or empty."""
        return os.environ.get(self.api_key_env) or NO_KEY

    def key_is_set(self) -> bool:
        return bool(os.environ.get(self.api_key_env))
