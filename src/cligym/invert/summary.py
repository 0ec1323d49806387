"""The summary of an inversion run: yield, discard reasons, categories, time per verified
task, the tasks' difficulty labels, and (the LLM-agent path) tokens and the reproduction rate."""

from __future__ import annotations

from collections import Counter

from cligym.layout import RunDir
from cligym.models.gold import GoldEnv
from cligym.models.io import load
from cligym.models.run import Summary
from cligym.models.task import Candidate, Task
from cligym.models.timing import PhaseSeconds


def summarize(run: RunDir, gold: GoldEnv, attempts: int, run_seconds: float | None = None) -> Summary:
    """The run's figures over the first ``attempts`` candidate records; with ``run_seconds``
    (one run of a sample's tests in a fresh gold container, measured by the caller) the
    physical limit of a task, two such runs, and the run's cost as a multiple of it."""
    candidates = [load(Candidate, run.candidate(i)) for i in range(attempts) if run.candidate(i).exists()]
    verified = [c for c in candidates if c.status == "verified"]
    phases = PhaseSeconds.summed([c.seconds for c in candidates])
    total = phases.total()
    sample_seconds = [sum(gold.durations.get(t, 0.0) for t in c.sample) for c in candidates] or [0.0]
    selected = sum(sample_seconds) / len(sample_seconds)
    per_verified = total / len(verified) if verified else None
    limit = 2 * run_seconds if run_seconds else None
    return Summary(
        attempts=len(candidates),
        verified=len(verified),
        discarded=len(candidates) - len(verified),
        yield_=round(len(verified) / len(candidates), 4) if candidates else 0.0,
        discard_reasons=dict(Counter(c.discard_kind for c in candidates if c.discard_kind)),
        per_category=dict(Counter(c.category for c in verified)),
        per_operator=dict(Counter(a.name for c in verified for a in c.operators)),
        phase_seconds=phases.rounded(),
        seconds_per_verified=round(per_verified, 2) if per_verified is not None else None,
        mean_fail_fraction=round(sum(c.fail_fraction for c in verified) / len(verified), 4) if verified else None,
        mean_extra_bytes=(
            round(sum(c.extra_bytes or 0 for c in verified) / len(verified)) if verified else None
        ),
        selected_tests_seconds=round(selected, 3),
        run_seconds=round(run_seconds, 3) if run_seconds is not None else None,
        limit_seconds=round(limit, 3) if limit else None,
        cost_ratio=round(per_verified / limit, 1) if limit and per_verified is not None else None,
        **_difficulty_figures(run, verified),
        **_agent_figures(candidates, verified),
    )


def _difficulty_figures(run: RunDir, verified: list[Candidate]) -> dict:
    """Verified tasks per difficulty label and per k, from their records."""
    labels: Counter[str] = Counter()
    ks: Counter[str] = Counter()
    for c in verified:
        path = run.task_record(c.instance_id or "")
        task = load(Task, path) if path.is_file() else None
        measured = task.difficulty if task else None
        labels[measured.label if measured else "unmeasured"] += 1
        if measured:
            ks[str(measured.k)] += 1
    return {"per_difficulty": dict(labels), "per_k": dict(sorted(ks.items()))}


def _agent_figures(candidates: list[Candidate], verified: list[Candidate]) -> dict:
    """Tokens and the reproduction rate (the LLM-agent path; zeros for operator runs)."""
    prompt = sum(c.prompt_tokens for c in candidates)
    completion = sum(c.completion_tokens for c in candidates)
    checked = [c for c in candidates if c.reproduced is not None]
    reproduced = sum(1 for c in checked if c.reproduced)
    agents = [c.agent for c in candidates if c.agent is not None]
    if not (prompt or completion or checked or agents):
        return {}
    return dict(
        prompt_tokens=prompt,
        completion_tokens=completion,
        tokens_per_attempt=round((prompt + completion) / len(candidates), 1) if candidates else None,
        tokens_per_verified=round((prompt + completion) / len(verified), 1) if verified else None,
        reproduction_checked=len(checked),
        reproduced=reproduced,
        reproduction_rate=round(reproduced / len(checked), 4) if checked else None,
        agent_stop_reasons=dict(Counter(a.stop_reason for a in agents)),
    )
