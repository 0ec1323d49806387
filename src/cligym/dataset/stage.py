"""The dataset stage: many projects in, one verified dataset out.

Per project the units are ``gold`` → ``invert`` (its attempts one after another: an
attempt learns from the earlier ones, and each project has its own seed, so the tasks do
not depend on how many projects run at once) → ``export`` → one ``validate`` per task;
``bundle`` saves the gold images at the end. The head process runs this loop: it keeps
up to ``slots`` units running in a pool (``cligym.dataset.pools``), writes each outcome to
the ledger, copies finished attempts from the run directories into the ledger as they
appear, and stops starting units once a budget (wall hours, disk) is spent. Running the
same command again continues from the ledger and the records on disk.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from cligym.dataset.ledger import Ledger
from cligym.dataset.pools import Pool, clear_outcome, written_outcome
from cligym.dataset.summary import dataset_bytes, finish_dataset
from cligym.errors import BadInput
from cligym.layout import DatasetDir, RunDir
from cligym.models.dataset import DatasetPlan, DatasetSummary, UnitOutcome
from cligym.models.io import load, save
from cligym.models.task import Candidate
from cligym.ui import Reporter

CHAIN = ("gold", "invert", "export")
#: Free bytes the disk keeps whatever ``--max-disk`` says; below it no unit starts.
MIN_FREE = 1 << 30


@dataclass
class Budgets:
    deadline: float | None = None  # time.time() after which no unit starts
    max_disk: int | None = None  # bytes the dataset directory may take
    retry_failed: bool = False  # run the units that failed in an earlier build again


def open_dataset(dataset: DatasetDir, plan: DatasetPlan) -> Ledger:
    """Save the plan (or check that a rerun asks for the same one) and open the ledger."""
    if dataset.plan.is_file():
        before = load(DatasetPlan, dataset.plan, "dataset plan")
        if before.seed != plan.seed:
            raise BadInput(f"{dataset.path} was built with seed {before.seed}; rerun with --seed {before.seed} "
                           "or choose another output directory")
        if before != plan:
            raise BadInput(f"{dataset.path} was built from another project list or budgets; "
                           "choose another output directory to build this one")
    elif dataset.path.exists() and any(dataset.path.iterdir()):
        raise BadInput(f"{dataset.path} is not empty and holds no dataset build; choose an empty directory")
    dataset.path.mkdir(parents=True, exist_ok=True)
    save(plan, dataset.plan)
    ledger = Ledger(dataset.ledger)
    for project in plan.projects:
        for kind in CHAIN:
            ledger.add(f"{kind}/{project.key}", project.key)
    if plan.bundle:
        ledger.add("bundle/all", "")
    return ledger


@dataclass
class _Head:
    dataset: DatasetDir
    plan: DatasetPlan
    ledger: Ledger
    pool: Pool
    budgets: Budgets
    reporter: Reporter
    stopped: str = ""
    seen_attempts: dict[str, set[int]] = field(default_factory=dict)
    _disk_checked: float = 0.0
    _disk_over: str = ""

    def ready(self) -> list[tuple[str, str | None]]:
        """Units that may start now (validations first: they finish fast), with the node
        their project lives on."""
        running = self.pool.running()
        found = [(row["key"], self._node(row["project"])) for row in self.ledger.rows("validate")
                 if row["state"] == "pending" and row["key"] not in running
                 and self.ledger.state(f"export/{row['project']}") == "done"]
        for project in self.plan.projects:
            for kind in CHAIN:
                key = f"{kind}/{project.key}"
                state = self.ledger.state(key)
                if state == "pending" and key not in running:
                    found.append((key, self._node(project.key) if kind != "gold" else None))
                if state != "done":
                    break
        if not found and not running and self.plan.bundle and self.ledger.state("bundle/all") == "pending":
            found.append(("bundle/all", None))
        return found

    def _node(self, project: str) -> str | None:
        """The node that built the project's gold (None: any node, which pulls the gold
        image from the plan's registry where it lacks it)."""
        if self.plan.registry:
            return None
        rows = self.ledger.rows("gold", project)
        return rows[0]["node"] or None if rows else None

    def over_budget(self) -> str:
        if self.budgets.deadline is not None and time.time() >= self.budgets.deadline:
            return "the wall-clock budget (--max-hours) is spent"
        if time.monotonic() - self._disk_checked > 15:
            self._disk_checked = time.monotonic()
            self._disk_over = ""
            if shutil.disk_usage(self.dataset.path).free < MIN_FREE:
                self._disk_over = f"less than {MIN_FREE >> 30} GiB is free on the disk"
            elif self.budgets.max_disk is not None and dataset_bytes(self.dataset) >= self.budgets.max_disk:
                self._disk_over = f"the dataset reached --max-disk ({self.budgets.max_disk} bytes)"
        return self._disk_over

    def fill(self) -> None:
        for key, node in self.ready():
            if len(self.pool.running()) >= self.pool.slots:
                return
            reason = self.over_budget()
            if reason:
                self.stopped = reason
                return
            clear_outcome(self.dataset, key)
            self.ledger.start(key)
            self.pool.submit(key, self.budgets.deadline, node)
            self.reporter.log(f"started {key}")
        self.reporter.log(self.progress_line())

    def record(self, key: str, outcome: UnitOutcome, seconds: float) -> None:
        """The unit's outcome into the ledger (an unfinished one stays pending); an export's
        tasks become validate units."""
        if outcome.unfinished:
            self.ledger.pause(key, detail=outcome.detail, seconds=seconds)
            return
        self.ledger.finish(key, ok=outcome.ok, detail=outcome.detail, node=outcome.node, seconds=seconds,
                           oracle=outcome.oracle, nop=outcome.nop)
        project = key.split("/", 2)[1]
        for task in outcome.tasks:
            self.ledger.add(f"validate/{task}", project)

    def finished(self, key: str, outcome: UnitOutcome, seconds: float) -> None:
        self.record(key, outcome, seconds)
        said = "paused" if outcome.unfinished else "done" if outcome.ok else "FAILED"
        self.reporter.note(f"{said} {key}: {outcome.detail}")
        self.reporter.advance()
        self.reporter.log(self.progress_line())

    def progress_line(self) -> str:
        """Each inverting project's attempts and tasks, tasks validated, the yield so far."""
        rows = self.ledger.rows()
        attempts = [r for r in rows if r["kind"] == "attempt"]
        made = sum(r["state"] == "done" for r in attempts)
        valid = sum(r["kind"] == "validate" and r["state"] == "done" for r in rows)
        share = f"{made / len(attempts):.0%}" if attempts else "-"
        planned = {p.key: p.attempts for p in self.plan.projects}
        inverting = [key.split("/", 1)[1] for key in sorted(self.pool.running()) if key.startswith("invert/")]
        each = [f"{p} {sum(r['project'] == p for r in attempts)}/{planned.get(p, '?')} "
                f"({sum(r['project'] == p and r['state'] == 'done' for r in attempts)} tasks)" for p in inverting]
        return "; ".join([*each, f"{valid} validated, yield {share} of {len(attempts)}"])

    def recover(self) -> None:
        """Units a dead head left running: those whose worker wrote its outcome are done
        (their work is not repeated), the others run again."""
        for row in self.ledger.rows():
            if row["state"] == "running":
                outcome = written_outcome(self.dataset, row["key"])
                if outcome is not None:
                    self.record(row["key"], outcome, 0.0)
        self.ledger.reset_running()

    def sync_attempts(self) -> None:
        """Each attempt the projects' runs finished since the last call, into the ledger."""
        for project in self.plan.projects:
            seen = self.seen_attempts.setdefault(project.key, set())
            for attempt, path in RunDir(self.dataset.run(project.key)).candidate_records().items():
                if attempt in seen:
                    continue
                try:
                    candidate = load(Candidate, path)
                except BadInput:
                    continue  # being written
                self.ledger.record(f"attempt/{project.key}/{attempt:04d}", project.key,
                                   "done" if candidate.status == "verified" else "skipped",
                                   candidate.instance_id or f"{candidate.discard_kind}: {candidate.reason}",
                                   round(candidate.seconds.total(), 2))
                seen.add(attempt)


def build(out: Path, plan: DatasetPlan, pool: Pool, *, budgets: Budgets, reporter: Reporter) -> DatasetSummary:
    """Build (or go on building) the dataset in ``out``; returns its summary."""
    dataset = DatasetDir(out)
    ledger = open_dataset(dataset, plan)
    head = _Head(dataset, plan, ledger, pool, budgets, reporter)
    tick = time.monotonic()
    try:
        head.recover()
        if head.budgets.retry_failed:
            ledger.reset_failed()
        with reporter.task(f"building the dataset of {len(plan.projects)} projects ({pool.slots} workers)"):
            while True:
                head.fill()
                if not pool.running():
                    break
                for key, outcome, seconds in pool.wait(timeout=2.0):
                    head.finished(key, outcome, seconds)
                head.sync_attempts()
                now = time.monotonic()
                ledger.add_wall(now - tick)
                tick = now
        head.sync_attempts()
        ledger.add_wall(time.monotonic() - tick)
        tick = time.monotonic()
        return finish_dataset(dataset, plan, ledger, head.stopped)
    finally:
        pool.stop()
        ledger.add_wall(time.monotonic() - tick)  # an interrupted build's last seconds
        ledger.close()
