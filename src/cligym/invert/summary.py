"""The summary of an inversion run: yield, discard reasons, categories, time per verified
task, the tasks' difficulty labels, and (the LLM-agent path) tokens and the reproduction rate."""

from __future__ import annotations

from collections import Counter

from cligym.layout import RunDir
from cligym.models.gold import GoldEnv
from cligym.models.io import load
from cligym.models.run import Summary
from cligym.models.task import Candidate, Task


def summarize(run: RunDir, gold: GoldEnv, attempts: int) -> Summary:
    """The run's figures over the first ``attempts`` candidate records."""
    candidates = [load(Candidate, run.candidate(i)) for i in range(attempts) if run.candidate(i).exists()]
    verified = [c for c in candidates if c.status == "verified"]
    stage: Counter[str] = Counter()
    for c in candidates:
        stage.update(c.seconds)
    total = sum(stage.values())
    sample_seconds = [sum(gold.durations.get(t, 0.0) for t in c.sample) for c in candidates] or [0.0]
    return Summary(
        attempts=len(candidates),
        verified=len(verified),
        discarded=len(candidates) - len(verified),
        yield_=round(len(verified) / len(candidates), 4) if candidates else 0.0,
        discard_reasons=dict(Counter(c.discard_kind for c in candidates if c.discard_kind)),
        per_category=dict(Counter(c.category for c in verified)),
        per_operator=dict(Counter(a.name for c in verified for a in c.operators)),
        stage_seconds={k: round(v, 2) for k, v in sorted(stage.items())},
        seconds_per_verified=round(total / len(verified), 2) if verified else None,
        mean_fail_fraction=round(sum(c.fail_fraction for c in verified) / len(verified), 4) if verified else None,
        mean_extra_bytes=(
            round(sum(c.extra_bytes or 0 for c in verified) / len(verified)) if verified else None
        ),
        selected_tests_seconds=round(sum(sample_seconds) / len(sample_seconds), 3),
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
