"""Records of one inversion attempt (Candidate) and of a verified task (Task)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from cligym import __version__
from cligym.models.reference import SystemState
from cligym.models.timing import PhaseSeconds

DiscardKind = Literal[
    "no_target", "build_failed", "no_failure", "not_reproducible", "trivial", "leak",
    "not_solvable", "duplicate", "error",
    # a composite state none of whose operators is necessary; an issue text that a check refused
    "not_minimal", "bad_text",
    # a task the task-blind sweeper repairs, once the run has its share of those (SWEEPER_SHARE);
    # a scenario attempt whose every plan fails a set of tests the run's tasks fail often
    # enough (F2P_SHARE) while they fail other sets too
    "sweeper_solves", "worn_symptom",
    # the LLM-agent path only
    "bad_query", "no_dockerfile", "tests_changed",
    # neither the degrader's own repair nor one from what the image holds is proven offline
    "no_offline_repair",
]
Origin = Literal["operators", "agent"]
#: What a task of the agent path names as its operator.
AGENT_OPERATOR = "llm_agent"


class RepairStep(BaseModel):
    """One step of a repair script: the shell lines that undo one change (joined by ``&&``),
    under a comment naming what it repairs."""

    label: str
    lines: list[str]


def pair_key(operator: str, target: str) -> str:
    """How records name an operator with the target it changes (a *pair*): ``operator|target``."""
    return f"{operator}|{target}"


def pair_operator(key: str) -> str:
    """The operator of a pair's key."""
    return key.partition("|")[0]


def pair_target(key: str) -> str:
    """The target of a pair's key."""
    return key.partition("|")[2]


def plan_key(pairs: list[str]) -> str:
    """How records name a state of several pairs (in order of application): joined by ``" + "``."""
    return " + ".join(pairs)


def plan_pairs(key: str) -> list[str]:
    """The pairs of a plan's key."""
    return key.split(" + ")


class AppliedChange(BaseModel):
    """One change of a broken state, an operator's or a scenario's, with what the run learnt about it."""

    name: str
    category: str
    target: str
    symptom: str
    hint: str
    #: patterns (regular expressions, case-insensitive) of the error text this operator's
    #: symptom speaks of: a text names the symptom only when some F2P error matches one
    shows: list[str] = Field(default_factory=list)
    #: how the repair is done with only what is in the image ("" = it is not: the bytes
    #: exist only in the oracle's script, or a network is needed)
    offline: str = ""
    #: the minimality evidence of a composite state: is the operator necessary (some F2P
    #: test passes with its ΔD left out), and which F2P tests pass without it
    necessary: bool | None = None
    fixes: list[str] = Field(default_factory=list)
    #: "fault": it breaks tests; "blocker": it makes the obvious repair of the others fail
    #: (checked by the blocker check: ``blocks``)
    role: Literal["fault", "blocker"] = "fault"
    #: did the blocker check hold (the naive repair fails with it, works once it is undone)?
    blocks: bool | None = None
    #: the paths this change injected or broke: what its repair must touch
    places: list[str] = Field(default_factory=list)

    @property
    def pair(self) -> str:
        """The operator with its target, as records name them (``pair_key``)."""
        return pair_key(self.name, self.target)


class DegradationQuery(BaseModel):
    """What the query model asks the degrading agent to do (the paper's task prompt)."""

    title: str = Field(min_length=1, max_length=200)
    category: str = Field(min_length=1, max_length=60)
    selected_tests: list[str] = Field(min_length=1)
    description: str = Field(min_length=1)
    expected_error: str = ""
    recovery_strategy: str = ""


class AgentRun(BaseModel):
    """How the degrading agent's run went (LLM path)."""

    stop_reason: str
    steps: int
    seconds: float
    summary: str = ""
    trajectory: str = ""  # path of its ATIF file, relative to the run directory
    #: a limit stopped it before it wrote its Dockerfile while the tests failed: it was asked once more
    last_turn: bool = False
    #: it wrote a repair of its own when asked (``RECOVERY_TURN``), proven before the derived one
    recovery: bool = False


class Candidate(BaseModel):
    id: str
    origin: Origin = "operators"
    attempt: int
    seed: int
    status: Literal["verified", "discarded"]
    discard_kind: DiscardKind | None = None
    reason: str = ""
    operators: list[AppliedChange] = Field(default_factory=list)
    dockerfile: list[str] = Field(default_factory=list)
    solution: str = ""
    sample: list[str] = Field(default_factory=list)
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    fail_fraction: float = 0.0
    instance_id: str | None = None
    extra_bytes: int | None = None
    seconds: PhaseSeconds = Field(default_factory=PhaseSeconds)
    #: proposals of this attempt that broke no selected test, or did not build ("op|target")
    screened: list[str] = Field(default_factory=list)
    #: operators that minimality dropped from this attempt's state as decoys ("op|target")
    decoys: list[str] = Field(default_factory=list)
    #: proposals of this attempt whose state broke more of the sample than the degrader
    #: took (also in ``screened``), with the fail fraction they showed
    refused: dict[str, float] = Field(default_factory=dict)
    # the LLM-agent path
    query: DegradationQuery | None = None
    refined: bool = False
    agent: AgentRun | None = None
    dropped_lines: list[str] = Field(default_factory=list)  # agent Dockerfile lines left out of ΔD, and why
    # did gold + ΔD alone reproduce the agent's failing set? False also when ΔD does not
    # build; None when the attempt ended before that check
    reproduced: bool | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def category(self) -> str:
        if self.operators:
            return self.operators[0].category
        return self.query.category if self.query else self.origin


Label = Literal["easy", "medium", "hard"]


class AttemptNotes(BaseModel):
    """What a degrader records on its attempt's Candidate beyond the pipeline's fields (the
    LLM path: the query, the agent's run, its own test run's split, its tokens)."""

    origin: Origin = "operators"
    query: DegradationQuery | None = None
    refined: bool = False
    agent: AgentRun | None = None
    dropped_lines: list[str] = Field(default_factory=list)
    FAIL_TO_PASS: list[str] = Field(default_factory=list)
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    fail_fraction: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class TaskFields(BaseModel):
    """The Task fields a degrader decides; the pipeline fills in the rest."""

    origin: Origin = "operators"
    scenario: str = ""
    family: str = ""
    query: DegradationQuery | None = None


class Difficulty(BaseModel):
    """How hard a task is, measured without an LLM (``cligym.verify.difficulty``)."""

    #: changes each necessary (leave-one-repair-out) plus blockers that pass the blocker check
    k: int
    #: rounds of "repair every change whose path the failing output names, rerun" until the
    #: F2P tests pass; ``changes + 1`` when they never do (nothing named is left to repair)
    reveal_depth: int
    #: the first failing output, or the image's environment, names an injected path verbatim
    culprit_named: bool
    #: the task-blind battery of generic repairs (``sweeper.sh``) makes every F2P test pass
    sweeper_solves: bool
    #: distinct paths the oracle repair touches, and distinct subsystems (categories)
    breadth: int
    subsystems: int
    label: Label

    @staticmethod
    def grade(k: int, reveal_depth: int, culprit_named: bool, sweeper_solves: bool, breadth: int,
              subsystems: int = 1) -> Label:
        """One point each for: k >= 2; the cause is hidden (no injected path named, or the
        named ones are not all: reveal depth >= 2); the sweeper fails; the repair is broad
        (3 or more places, or 2 or more subsystems). Hard: 3 or 4 points with k >= 2 and
        the sweeper failing; medium: 2 or more; easy: 0 or 1 (a single fault the sweeper
        repairs is easy however it hides)."""
        hidden = not culprit_named or reveal_depth >= 2
        points = (k >= 2) + hidden + (not sweeper_solves) + (breadth >= 3 or subsystems >= 2)
        if points >= 3 and k >= 2 and not sweeper_solves:
            return "hard"
        return "medium" if points >= 2 else "easy"


LABELS: tuple[Label, ...] = ("easy", "medium", "hard")


class Task(BaseModel):
    """A verified task. What its changes are (operators, categories, symptoms, hints) is read
    from ``applied``; a task of the agent path, which has none, says it by its ``query``."""

    model_config = ConfigDict(extra="forbid")

    #: 2: operators, category, categories, symptoms and hints are derived, no longer stored
    schema_version: Literal[2] = 2
    cligym_version: str = __version__
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    instance_id: str
    repo: str  # the gold source, e.g. "markupsafe==3.0.2"
    image_name: str  # the gold image the ΔD lines build FROM
    gold_image_id: str
    workdir: str
    test_command: str
    dockerfile: list[str]  # ΔD: the lines that follow FROM
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str]
    selected_tests: list[str]  # F2P + P2P in the order they run
    solution: str
    changed_paths: list[str] = Field(default_factory=list)  # what ΔD added, changed or deleted
    errors: dict[str, str] = Field(default_factory=dict)  # F2P test -> error excerpt
    fail_fraction: float
    suite_size: int
    extra_bytes: int | None = None
    seed: int
    attempt: int
    origin: Origin = "operators"
    #: the query the degrading agent followed (the agent path only)
    query: DegradationQuery | None = None
    #: the changes of the state with their minimality evidence ([] for the agent path)
    applied: list[AppliedChange] = Field(default_factory=list)
    #: can the state be repaired with only what is in the image? Measured by one rule for
    #: every task (``cligym.verify.carried``): the proven solution carries at most
    #: ``CARRY_LIMIT`` bytes of gold. None: a record made before it was measured
    offline_fair: bool | None = None
    #: the bytes of gold the solution carries (None: not measured)
    carried_bytes: int | None = None
    #: who wrote the solution: the degrader (an operator's or scenario's steps, the agent's
    #: recovery) or cligym from what the image holds ("derived")
    solution_origin: Literal["degrader", "derived"] = "degrader"
    #: the oracle repair, one step per change, in the order it runs (``solution`` is its
    #: script; [] for the agent path, whose repair is derived)
    repair_steps: list[RepairStep] = Field(default_factory=list)
    #: the incident scenario that made the state ("" for operator tasks and the agent path)
    scenario: str = ""
    #: the scenario's family, its mechanism (``Scenario.family``; "" where ``scenario`` is)
    family: str = ""
    #: measured difficulty (None for the agent path, whose changes are not known one by one)
    difficulty: Difficulty | None = None
    #: a Debian-world task: the system state its verifier compares with gold's (None: a
    #: Python project's task, whose verifier reads what to compare from gold itself)
    state: SystemState | None = None

    @property
    def operators(self) -> list[str]:
        return [a.name for a in self.applied] or [AGENT_OPERATOR]

    @property
    def project(self) -> str:
        """The project's name: a PyPI spec's (``name==version``) or a Debian source
        package's (``deb:name=version``)."""
        return self.repo.removeprefix("deb:").split("=")[0]

    @property
    def category(self) -> str:
        """The first fault's category (a scenario may apply a blocker first), else the query's."""
        faults = [a for a in self.applied if a.role == "fault"] or self.applied
        if faults:
            return faults[0].category
        return self.query.category if self.query else self.origin

    @property
    def categories(self) -> list[str]:
        """The changes' categories; the agent path's are its query's and ``code`` when ΔD
        changed the project's own files (bytecode caches aside)."""
        if self.applied:
            return sorted({a.category for a in self.applied})
        root = self.workdir.rstrip("/") + "/"
        code = any(p.startswith(root) and "__pycache__" not in p for p in self.changed_paths)
        return sorted({self.category, *(["code"] if code else [])})

    @property
    def symptoms(self) -> list[str]:
        return [a.symptom for a in self.applied]

    @property
    def hints(self) -> list[str]:
        """The changes' hints; the agent path's is its query's recovery strategy."""
        if self.applied or self.query is None:
            return [a.hint for a in self.applied]
        return [self.query.recovery_strategy]


def run_order(task: Task) -> list[str]:
    """F2P + P2P in the order the suite runs them."""
    return list(task.selected_tests)
