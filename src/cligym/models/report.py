"""The report record: every number ``cligym report`` computes, the page's only source."""

from __future__ import annotations

from pydantic import BaseModel, Field

from cligym.models.timing import PhaseSeconds


class PaperRow(BaseModel):
    """One line of the dataset table: our value beside the paper's (None: not measured)."""

    metric: str
    ours: float | None
    paper: float | None
    note: str = ""


class ProjectRow(BaseModel):
    """One project (the paper's Table 9 shape, plus cost)."""

    project: str
    tests: int | None  # the gold suite's passing tests
    attempts: int
    tasks: int
    yield_: float | None = Field(alias="yield")
    mean_f2p: float | None
    mean_p2p: float | None
    seconds_per_task: float | None
    bytes_per_task: float | None

    model_config = {"populate_by_name": True}


class TaskRow(BaseModel):
    instance_id: str
    project: str
    category: str
    operators: list[str]
    difficulty: str = ""
    f2p: int
    p2p: int
    fail_fraction: float
    dockerfile_lines: int
    instruction: str = ""  # a link, relative to the report's folder ("" when not exported)
    dockerfile: str = ""


class PassRates(BaseModel):
    """pass@1 (the mean success over attempts) and pass@k (any attempt) over tasks."""

    tasks: int
    attempts: int
    pass_at_1: float | None
    pass_at_k: float | None


class RolloutFigures(BaseModel):
    overall: PassRates
    per_category: dict[str, PassRates] = Field(default_factory=dict)
    per_difficulty: dict[str, PassRates] = Field(default_factory=dict)
    by_hint: dict[str, PassRates] = Field(default_factory=dict)  # "hint" / "no hint"
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    steps: list[int] = Field(default_factory=list)  # per attempt
    loop_rate_failures: float | None = None


class DifficultyFigures(BaseModel):
    """The measured difficulty of the tasks (``Task.difficulty``), beside how long
    their Dockerfiles are. Distributions count measured tasks only; shares are of them."""

    measured: int
    unmeasured: int  # tasks without a measure (the agent path)
    labels: dict[str, int]  # easy / medium / hard -> tasks (all three, in that order)
    k: dict[int, int]  # value -> tasks, ascending
    reveal_depth: dict[int, int]
    breadth: dict[int, int]  # distinct paths the repair touches
    subsystems: dict[int, int]
    sweeper_solves: float | None  # share of measured tasks the generic repair battery solves
    culprit_named: float | None  # share whose first failing output names an injected path
    dockerfile_lines: float | None  # mean over every task, FROM line included
    paper_dockerfile_lines: float  # the CLI-Gym paper's mean


class ProjectMix(BaseModel):
    """How one project's tasks spread over what its tests fail."""

    project: str
    tasks: int
    failing_sets: int  # distinct F2P sets among its tasks
    top_failing_share: float | None  # the share of its tasks that fail its commonest F2P set
    #: why one F2P set holds more than ``MIX_SHARE`` of its tasks ("" when none does)
    over: str = ""
    #: whether that is because its tasks fail fewer distinct sets than a spread needs
    #: (1 / ``MIX_SHARE``): the runs found no other set of tests their changes fail
    too_few_sets: bool = False


class MixFigures(BaseModel):
    """How broad the dataset's mix is: tasks by scenario family (one mechanism; operator
    composites by their first change's category), by category and by F2P set per project,
    and the near-duplicates (one project, one F2P set, the same broken paths)."""

    families: dict[str, int]
    top_family_share: float | None
    #: per family, the share of its measured tasks the sweeper (every habit) solves
    sweeper_solves: dict[str, float | None]
    categories: dict[str, int]
    projects: list[ProjectMix]
    near_duplicates: list[list[str]]  # groups of instance ids


#: The share above which one family, or one F2P set of a project, is flagged.
MIX_SHARE = 0.25


class Report(BaseModel):
    inputs: list[str]
    table: list[PaperRow]
    projects: list[ProjectRow]
    categories: dict[str, int]
    operators: dict[str, int]
    fail_fractions: list[float]
    f2p_counts: list[int]
    p2p_counts: list[int]
    dockerfile_lines: list[int]
    issue_words: dict[str, list[int]]  # "<style> hint" / "<style> no hint" -> words per task
    funnel: dict[str, int]  # attempts, verified, exported, validated, rollouts, successful, kept
    discard_reasons: dict[str, int]
    agent_stop_reasons: dict[str, int]
    difficulty: DifficultyFigures
    mix: MixFigures | None = None  # None in reports written before it was computed
    rollouts: RolloutFigures | None = None
    tokens: dict[str, float | None]
    storage: dict[str, float | None]
    tasks: list[TaskRow]
    #: where the attempts' time went: every run's phases over its verified tasks (None: no task)
    phase_seconds_per_task: PhaseSeconds | None = None
