"""Records of the dataset stage: the list of projects a dataset is made from (read from
PROJECTS.toml), the plan the build keeps beside its ledger, what one unit of work returns,
and the dataset's summary."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from cligym.models.timing import PhaseSeconds

#: What one dataset project gets when neither it nor the file's top level says otherwise.
DEFAULT_ATTEMPTS = 30
DEFAULT_TASKS = 10


class ProjectEntry(BaseModel):
    """One ``[[project]]`` table of PROJECTS.toml."""

    model_config = ConfigDict(extra="forbid")

    source: str | None = None  # what 'cligym gold' takes: NAME==VERSION or a local directory
    name: str | None = None  # the project's key in the dataset (default: from the source)
    attempts: int | None = Field(default=None, ge=1)
    tasks: int | None = Field(default=None, ge=1)
    profile: str | None = None  # a profile TOML, relative to PROJECTS.toml
    image: str | None = None  # an existing image ...
    test_cmd: str | None = None  # ... and its test command


class ProjectsFile(BaseModel):
    """PROJECTS.toml: top-level defaults and one table per project."""

    model_config = ConfigDict(extra="forbid")

    attempts: int = Field(default=DEFAULT_ATTEMPTS, ge=1)
    tasks: int = Field(default=DEFAULT_TASKS, ge=1)
    project: list[ProjectEntry] = Field(default_factory=list)


class PlannedProject(BaseModel):
    """A project as the build runs it: everything resolved, its own seed."""

    key: str
    source: str | None
    profile: str | None  # an absolute path
    image: str | None
    test_cmd: str | None
    attempts: int
    tasks: int
    seed: int


class DatasetPlan(BaseModel):
    """What the build of one dataset directory was asked for (saved once; a rerun with
    another seed or another project list is refused)."""

    seed: int
    projects: list[PlannedProject]
    bundle: bool = True  # save the gold images beside the tasks
    #: push each gold image to this registry when built; units pull it where it is missing,
    #: so no unit is tied to the node that built its gold (None: the gold stays where built)
    registry: str | None = None


class UnitOutcome(BaseModel):
    """What a unit of work hands back to the ledger."""

    ok: bool
    detail: str = ""  # one line: the cause of a failure, or what was made
    node: str = ""  # where it ran (a Ray node id; the host name on one machine)
    tasks: list[str] = Field(default_factory=list)  # an export's task names
    oracle: float | None = None  # a validation's rewards
    nop: float | None = None
    #: the unit stopped at the build's deadline with its work not done (an inversion with
    #: attempts left): it stays pending, and the next build goes on with it
    unfinished: bool = False


class ProjectFigures(BaseModel):
    """One project's line of the dataset summary."""

    key: str
    state: str  # done, failed, pending (the build stopped before it finished)
    cause: str = ""
    gold_tests: int = 0
    attempts: int = 0
    verified: int = 0
    exported: int = 0
    validated: int = 0
    yield_: float = Field(default=0.0, alias="yield")
    seconds: float = 0.0

    model_config = ConfigDict(populate_by_name=True)


class UnitSeconds(BaseModel):
    """Seconds a dataset build's units took, by kind (``cligym.dataset.units``)."""

    gold: float = 0.0
    invert: float = 0.0
    export: float = 0.0
    validate_: float = Field(default=0.0, alias="validate")
    bundle: float = 0.0

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class DatasetSummary(BaseModel):
    """The dataset as a whole (``DIR/summary.json``)."""

    model_config = ConfigDict(populate_by_name=True)

    seed: int
    projects: list[ProjectFigures]
    tasks: int  # exported Harbor tasks
    validated: int  # of them, oracle 1 and nop 0
    held: int = 0  # of them, what the dataset holds: the validated less the mix's left out
    #: validated tasks the dataset's mix leaves out (in left-out/), and why (cligym.dataset.mix)
    left_out_for_mix: dict[str, str] = Field(default_factory=dict)
    attempts: int
    verified: int
    yield_: float = Field(alias="yield")
    stopped: str = ""  # why the build stopped before every unit was done ("" when complete)
    dataset_bytes: int  # the dataset directory, the gold image bundle included
    bundle_bytes: int
    bytes_per_task: float | None  # the dataset directory over its validated tasks
    bytes_per_task_beyond_gold: float | None  # the same without the gold image bundle
    unit_seconds: float  # summed over every unit (CPU-bound work runs inside containers)
    #: those seconds by kind of unit
    unit_seconds_by_kind: UnitSeconds = Field(default_factory=lambda: UnitSeconds())
    #: every attempt's seconds by phase (part of the invert units'), and their sum over the verified tasks
    phase_seconds: PhaseSeconds = Field(default_factory=PhaseSeconds)
    seconds_per_verified: float | None = None
    hard: int = 0  # held tasks graded hard (``Difficulty.label``)
    wall_seconds: float  # this and the earlier builds of the directory
    tasks_per_hour: float | None
    hard_per_hour: float | None = None
    same_delta_groups: int = 0  # ΔDs exported for more than one project (kept: other golds)
    #: validated tasks whose record holds probe verdicts measured on their present files
    #: (``cligym validate --probes DIR/harbor``), and those of them that failed a probe
    probed: int = 0
    probes_failed: list[str] = Field(default_factory=list)
