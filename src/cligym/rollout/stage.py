"""The rollout stage: agents attempt exported (Harbor) tasks; each attempt is verified with
the task's own tests and leaves an ATIF trajectory and a result record.

Layout (``cligym.layout.RolloutDir``): ROLLOUT_DIR/<task>/<attempt>/trajectory.json and
result.json, and ROLLOUT_DIR/summary.json with pass@1 and pass@k per task and overall.
Finished attempts are not redone when the command runs again. The agents are the classes
of :mod:`cligym.rollout.agents`.
"""

from __future__ import annotations

import os
import time
import uuid
from math import comb
from pathlib import Path

from cligym import __version__
from cligym.agents.loop import AgentLimits
from cligym.agents.trajectory import TrajectoryRecorder
from cligym.errors import BadInput, BuildFailed
from cligym.harness.trial import run_verifier, task_image
from cligym.harness.workers import run_workers
from cligym.layout import ExportDir, RolloutDir, TaskDir
from cligym.models.io import load, save
from cligym.models.rollout import RolloutResult, RolloutSummary
from cligym.models.trajectory import Trajectory
from cligym.rollout.agents import RolloutAgent
from cligym.rollout.registry import get_agent
from cligym.runtime import ImageKind, Runtime
from cligym.ui import Reporter

def pass_at(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate from n attempts with c successes."""
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def run_attempt(runtime: Runtime, tag: str, task: TaskDir, agent: RolloutAgent,
                attempt: int = 0, autosave: Path | None = None) -> tuple[RolloutResult, Trajectory]:
    """Attempt ``attempt`` in a fresh container of ``tag``: the agent, then the task's verifier.
    With ``autosave``, the trajectory so far is written there after every step."""
    instruction = task.instruction.read_text(encoding="utf-8")
    recorder = TrajectoryRecorder(
        agent_name=f"cligym-{agent.name}", version=__version__, model_name=agent.model_name,
        session_id=str(uuid.uuid4()), autosave=autosave,
    )
    started = time.monotonic()
    with runtime.session(tag) as session:
        outcome = agent.run(session, task, instruction, recorder, episode=attempt)
        judged = run_verifier(session, task)
    trajectory = recorder.finish({"reward": judged.reward, "stop_reason": outcome.stop_reason})
    record = RolloutResult(
        task_id=task.name, attempt=attempt, agent=agent.name, reward=judged.reward, verdict=judged.detail,
        finished=outcome.stop_reason == "finished",
        stop_reason=outcome.stop_reason, steps=outcome.steps, prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens, seconds=round(time.monotonic() - started, 3),
    )
    return record, trajectory


def harbor_tasks(tasks: Path) -> list[TaskDir]:
    """The exported tasks to roll out; they must be Harbor tasks."""
    found = ExportDir(Path(tasks)).task_dirs()
    for task in found:
        if task.format != "harbor":
            raise BadInput(f"task {task.name} is a Terminal-Bench 1.0 task; rollouts run Harbor tasks "
                           "(--format harbor)")
    return found


def _roll_task(runtime: Runtime, task: TaskDir, agent: RolloutAgent, k: int, out: RolloutDir,
               reporter: Reporter) -> list[RolloutResult]:
    """Every attempt of one task; the task's image is built only if an attempt is missing."""
    records = [load(RolloutResult, out.result(task.name, n)) for n in range(k) if out.result(task.name, n).is_file()]
    missing = [n for n in range(k) if not out.result(task.name, n).is_file()]
    reporter.advance(len(records))
    if not missing:
        return records
    try:
        with task_image(runtime, task, ImageKind.ROLLOUT) as tag:
            for attempt in missing:
                if agent.stop.is_set():
                    break  # the rollout is stopping: what is done is saved
                record, trajectory = run_attempt(runtime, tag, task, agent, attempt,
                                                 autosave=out.trajectory(task.name, attempt))
                save(trajectory, out.trajectory(task.name, attempt))
                save(record, out.result(task.name, attempt))
                records.append(record)
                reporter.advance()
    except BuildFailed as exc:
        raise BadInput(f"task {task.name} does not build: {exc}") from exc
    return sorted(records, key=lambda r: r.attempt)


def rollout(
    tasks: Path,
    out: Path,
    *,
    agent: str = "llm",
    k: int = 1,
    client=None,
    limits: AgentLimits | None = None,
    runtime: Runtime | None = None,
    reporter: Reporter | None = None,
    workers: int = 1,
) -> RolloutSummary:
    """``k`` attempts of ``agent`` on every Harbor task in ``tasks``; the summary is saved.
    ``workers`` tasks run at once (each in its own containers; a task's attempts one after
    another), which is what a model server serving many requests at once is for."""
    agent_class = get_agent(agent)
    if k < 1:
        raise BadInput("-k must be at least 1")
    runner = agent_class(client, limits)
    dirs = harbor_tasks(tasks)
    runtime = runtime or Runtime()
    reporter = reporter or Reporter()
    target = RolloutDir(Path(out))
    results: dict[str, list[RolloutResult]] = {}
    if workers < 1:
        raise BadInput("--workers must be at least 1")

    def roll(task: TaskDir) -> None:
        results[task.name] = _roll_task(runtime, task, runner, k, target, reporter)

    with reporter.task(f"rollouts ({agent}, k={k}, {workers} at once)", total=len(dirs) * k):
        run_workers(roll, dirs, workers, stop=runner.stop_now, runtime=runtime, name="rollout")
    summary = summarize(agent, k, results)
    summary.tasks_dir = os.path.abspath(tasks)
    save(summary, target.summary)
    return summary


def summarize(agent: str, k: int, results: dict[str, list[RolloutResult]]) -> RolloutSummary:
    per_task = {}
    for task, records in sorted(results.items()):
        n, c = len(records), sum(1 for r in records if r.reward == 1)
        per_task[task] = {"attempts": n, "successes": c, "pass@1": round(pass_at(n, c, 1), 4),
                          f"pass@{k}": round(pass_at(n, c, min(k, n)), 4)}
    every = [r for records in results.values() for r in records]
    tasks = len(per_task) or 1
    return RolloutSummary(
        agent=agent, k=k, tasks=len(per_task), attempts=len(every),
        successes=sum(1 for r in every if r.reward == 1),
        pass_at_1=round(sum(t["pass@1"] for t in per_task.values()) / tasks, 4),
        pass_at_k=round(sum(t[f"pass@{k}"] for t in per_task.values()) / tasks, 4),
        per_task=per_task,
        prompt_tokens=sum(r.prompt_tokens for r in every),
        completion_tokens=sum(r.completion_tokens for r in every),
    )
