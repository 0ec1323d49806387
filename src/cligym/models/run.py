"""Records of an inversion run as a whole: the arguments it was made with, and its summary."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, Field

from cligym.models.timing import PhaseSeconds


class InvertConfig(BaseModel):
    """The arguments a run directory was made with; a resumed run must match them."""

    gold_image_id: str
    seed: int
    operators: list[str]
    #: the incident scenarios the run may use, and who degrades: named operators only,
    #: scenarios only, or the default mix of both
    scenarios: list[str] = Field(default_factory=list)
    mix: Literal["operators", "scenarios", "mixed"] = "operators"
    sample_size: int
    max_operators: int
    agent: Literal["operators", "llm"] = "operators"
    model: str | None = None
    refine_rate: float | None = None
    #: which gold record (not only which image): a hash of its source, image and tests;
    #: None in runs made before the field
    gold_digest: str | None = None


class FlakyTests(BaseModel):
    """Gold tests a run found failing on the gold image itself (after a repair left them
    failing): flaky on this machine (a timing test under load, say); the run samples them
    no more."""

    tests: list[str] = Field(default_factory=list)


class Summary(BaseModel):
    attempts: int
    verified: int
    discarded: int
    yield_: float = Field(alias="yield")
    discard_reasons: dict[str, int]
    per_category: dict[str, int]
    per_operator: dict[str, int]
    #: seconds per phase over every attempt (older records: ``stage_seconds``)
    phase_seconds: PhaseSeconds = Field(validation_alias=AliasChoices("phase_seconds", "stage_seconds"))
    seconds_per_verified: float | None
    mean_fail_fraction: float | None
    mean_extra_bytes: float | None
    selected_tests_seconds: float  # the mean gold runtime of a sample (for the cost ratio)
    #: one run of a sample's tests in a fresh container of the gold image (made, started, the
    #: tests run, removed), measured at the run's end
    run_seconds: float | None = None
    #: the physical limit of one task: two runs of its selected tests (broken, repaired),
    #: each in a fresh container; and ``seconds_per_verified`` as a multiple of it
    limit_seconds: float | None = None
    cost_ratio: float | None = None
    #: verified tasks per difficulty label, and per k (tasks made before it was measured: "unmeasured")
    per_difficulty: dict[str, int] = Field(default_factory=dict)
    per_k: dict[str, int] = Field(default_factory=dict)
    # the LLM-agent path (zero / None for operator runs)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_per_attempt: float | None = None
    tokens_per_verified: float | None = None
    reproduction_checked: int = 0  # attempts whose ΔD was rebuilt from gold and run
    reproduced: int = 0
    reproduction_rate: float | None = None
    agent_stop_reasons: dict[str, int] = Field(default_factory=dict)
    #: whether the run stopped before its attempts were spent because its last attempts
    #: found nothing new to break (``invert.parallel.exhausted``)
    exhausted: bool = False

    model_config = {"populate_by_name": True}
