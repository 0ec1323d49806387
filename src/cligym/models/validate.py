"""Records of the validate stage: the reward an exported task gave its oracle and nop, the
verdicts of the probe batteries (``validate --probes``), and the report of a whole export
(saved beside it, see ``cligym.layout.ExportDir``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field

ProbeKind = Literal["honest", "cheat"]


class ModeResult(BaseModel):
    reward: float | None
    detail: str = ""


class ProbeResult(BaseModel):
    """One probe's verdict: an honest repair (after the oracle) must score 1, a cheat (with
    nothing repaired) 0."""

    probe: str
    kind: ProbeKind
    reward: float | None
    #: the verifier's last line (``cligym verifier: reward R: why``), or why there is no reward
    verdict: str = ""
    #: the probe script's exit status and its last output (one line)
    script_exit: int | None = None
    script_output: str = ""
    #: the probe does not apply to the image (its script exited 77)
    skipped: bool = False
    seconds: float = 0.0

    @property
    def expected(self) -> float:
        return 1.0 if self.kind == "honest" else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return self.skipped or self.reward == self.expected

    def line(self) -> str:
        """The probe, what it must score, and its verdict, in one line."""
        said = self.verdict or "no verdict line (the verifier did not run to its end)"
        return f"probe {self.probe} ({self.kind}, must score {self.expected:g}): reward {self.reward}: {said}"


class TaskValidation(BaseModel):
    task: str
    format: str
    oracle: ModeResult
    nop: ModeResult
    seconds: float
    #: the task's content digest when validated (Harbor's, as in dataset.toml): a record
    #: whose digest is not the task's now says nothing about it
    digest: str | None = None
    #: the probe batteries' verdicts (None: not run)
    probes: list[ProbeResult] | None = None
    #: the seconds the probes took (part of ``seconds``)
    probe_seconds: float | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return self.oracle.reward == 1 and self.nop.reward == 0 and not self.failed_probes

    @property
    def failed_probes(self) -> list[ProbeResult]:
        return [p for p in self.probes or [] if not p.ok]


class ValidationReport(BaseModel):
    """Every task of an export run as the oracle and as nop (and through the probes)."""

    tasks_dir: str
    validated: int
    ok: int
    results: list[TaskValidation] = Field(default_factory=list)
    #: the mean seconds the probe batteries took per probed task (None: no probe ran)
    probe_seconds_per_task: float | None = None

    @classmethod
    def of(cls, tasks_dir: str, results: list[TaskValidation]) -> ValidationReport:
        costs = [r.probe_seconds for r in results if r.probe_seconds is not None]
        return cls(tasks_dir=tasks_dir, validated=len(results), ok=sum(r.ok for r in results), results=results,
                   probe_seconds_per_task=round(sum(costs) / len(costs), 1) if costs else None)

    @property
    def all_ok(self) -> bool:
        return self.ok == self.validated
