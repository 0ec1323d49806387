"""Inversion of a Debian gold: the scenario degrader over the Debian world's planners
(``cligym.invert.debian_changes.PLANNERS``), with the run's shares and symptom rules of the
Python world's (``ScenarioDegrader``), and the same attempt pipeline. What differs is
carried by the run context: the Debian probe the planners choose from, and the system state
(``RunContext.state``) that every check, the sweeper's verdict and the task's verifier
compare with gold's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cligym.errors import BadInput, CligymError
from cligym.harness.bundle import script
from cligym.invert.context import RunContext, open_run
from cligym.invert.debian_changes import PLANNERS, DebianScenario
from cligym.invert.debian_site import DebianSite
from cligym.invert.parallel import run_attempts
from cligym.invert.proposal import Try
from cligym.invert.scenario_search import PATIENCE, SWEEPER_SHARE, ScenarioDegrader
from cligym.models.run import Summary
from cligym.runtime import Runtime
from cligym.ui import Reporter


class DebianDegrader(ScenarioDegrader):
    """Proposes one Debian planner's plan per try (incidents first, single changes as the
    fallback tier), on the Debian probe."""

    seed_prefix = "cligym-debian"
    #: a plan predicts every inner test of each autopkgtest test that touched its target (a
    #: test's processes are traced as a whole), while its state may fail some of them: a
    #: program the smoke tests never run. The measured set decides (``accept``).
    predicts_exactly = False
    #: the packages the checks' and repairs' own tools load (``tool_packages``), spared as
    #: the core is
    tools: set[str] | None = None
    #: ``PATIENCE``, or 1 when the samples hold every gold test (the suites of most Debian
    #: packages are that small): each attempt then draws from the same site, and an attempt
    #: whose ``MAX_TRIES`` plans found nothing new is evidence enough that the site is spent
    patience = PATIENCE

    def site(self, ctx: RunContext, sample: list[str], tries: list[Try]) -> DebianSite:
        """The Debian site of ``sample``, without the paths the attempt's faults already
        missed with (a program the tests never really run, a file they survive)."""
        if ctx.debian is None:
            raise BadInput(f"{ctx.gold.source.spec} has no Debian probe")
        missed = {p for t in tries for c in t.proposal.changes if c.applied.role == "fault" for p in c.applied.places}
        if self.tools is None:
            self.tools = tool_packages(ctx.gold_session)
        site = DebianSite(ctx.debian, sample, missed, spared=self.tools)
        site.used, site.failing = dict(self.broken), self.failing  # spread over what earlier tasks did not touch
        return site


def tool_packages(session: Any) -> set[str]:
    """The packages (names without the architecture) the programs cligym runs in a broken
    container load, as ``tool-packages.sh`` finds them in gold."""
    result = session.exec(["sh", "-c", script("tool-packages.sh")], timeout=120)
    if not result.ok:
        raise CligymError(f"could not find the packages of the image's tools: {result.output.strip()[-300:]}")
    return {line.split(":")[0] for line in result.output.split() if line}


def planners(names: list[str] | None) -> list[DebianScenario]:
    """The Debian planners named (all of them for None or ["all"]); BadInput for an unknown name."""
    if not names or names == ["all"]:
        return list(PLANNERS.values())
    unknown = [n for n in names if n not in PLANNERS]
    if unknown:
        raise BadInput(f"unknown Debian scenario name(s): {', '.join(unknown)} (known: {', '.join(PLANNERS)})")
    return [PLANNERS[n] for n in names]


def invert_debian(gold_dir: Path, run_dir: Path, *, attempts: int, seed: int, scenarios: list[str] | None,
                  sample_size: int, runtime: Runtime | None, reporter: Reporter, max_tasks: int | None,
                  deadline: float | None) -> Summary:
    """Invert a Debian gold with its planners (``scenarios``: by name; None: all)."""
    chosen = planners(scenarios)
    ctx = open_run(gold_dir, run_dir, runtime, reporter, attempts, seed=seed, operators=[],
                   scenarios=[p.name for p in chosen], mix="scenarios" if scenarios else "mixed",
                   sample_size=sample_size, max_operators=1)
    with ctx.runtime.session(ctx.gold.image) as session, reporter.task(
        f"inverting {ctx.gold.source.spec}", total=attempts
    ):
        ctx.gold_session = session
        ctx.sweeper_share = SWEEPER_SHARE
        tasks = min(attempts, max_tasks) if max_tasks else attempts
        return run_attempts(ctx, run_degrader(chosen, tasks, ctx), attempts, max_tasks=max_tasks, deadline=deadline)


def run_degrader(chosen: list[DebianScenario], tasks: int, ctx: RunContext) -> DebianDegrader:
    """The run's degrader: patience 1 when every attempt samples the whole suite."""
    degrader = DebianDegrader(chosen, tasks)
    if ctx.sample_size >= len(ctx.gold.tests):
        degrader.patience = 1
    return degrader
