"""What ``cligym curate`` reads: a ``cligym rollout`` directory or a Harbor job directory,
told apart by their layout, each turned into the same :class:`Attempt` records.

- A rollout directory (``cligym rollout -o OUT``): ``<task>/<attempt>/trajectory.json`` (ATIF)
  and ``result.json`` (:class:`~cligym.models.rollout.RolloutResult`).
- A Harbor job directory (``harbor run -o JOBS`` writes ``JOBS/<job>``): one folder per trial
  as Harbor's ``TrialPaths`` lays it out: ``config.json`` (written when the trial starts),
  ``result.json`` (Harbor's ``TrialResult``, written when it ends), ``agent/`` (the
  container's ``/logs/agent``: ``trajectory.json``, ATIF, when the agent writes one, as
  terminus-2 does) and ``verifier/``. The task is the result's ``task_name`` (``cligym/<id>``
  for a cligym export), the attempt the trial's place among its task's trials by start time.
  The reward is Harbor's record of it (``verifier_result.rewards["reward"]``, or the only
  reward), and only when Harbor holds it valid; never ``verifier/reward.txt``: the agent's
  container mounts that folder, so a tampering agent writes there what it likes. A trial
  with no single ATIF trajectory is listed with why (``no_trajectory``), never guessed at, and
  so is one whose agent steps record no tool call (what it ran cannot be checked for cheating);
  one without a valid reward too (``no_reward``), and judged ``not_successful``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from cligym.errors import BadInput
from cligym.layout import HarborJobDir, HarborTrialDir, RolloutDir
from cligym.models.curate import HarborTrialResult, Source
from cligym.models.io import load
from cligym.models.rollout import RolloutResult
from cligym.models.trajectory import Trajectory

EXPECTED = ("a rollout dir (<task>/<attempt>/trajectory.json and result.json, as cligym rollout writes) or a "
            "Harbor job dir (<trial>/config.json, result.json and agent/trajectory.json, as harbor run writes)")


@dataclass
class Attempt:
    """One trajectory to judge, with what its run's own record says of it."""

    trajectory: Trajectory
    task_id: str
    attempt: int
    reward: float | None
    path: str  # its folder, relative to the directory read
    own: bool  # made by cligym's own agent (a rollout), whose tools are cligym's
    no_reward: str = ""  # why the run's record holds no reward (a Harbor trial's verifier failed...)


@dataclass
class Input:
    """Everything read from one directory."""

    source: Source
    attempts: list[Attempt]
    trials: int  # every attempt or trial folder found
    incomplete: list[str] = field(default_factory=list)
    no_trajectory: dict[str, str] = field(default_factory=dict)
    no_reward: dict[str, str] = field(default_factory=dict)
    exceptions: dict[str, str] = field(default_factory=dict)


def harbor_trials(path: Path) -> list[Path]:
    """The trial folders of a Harbor job: those whose config.json is a trial's (it names the
    trial and its task; a job's names the job)."""
    found = []
    for folder in HarborJobDir(path).trial_dirs():
        try:
            config = json.loads(HarborTrialDir(folder).config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(config, dict) and "trial_name" in config and "task" in config:
            found.append(folder)
    return found


def read_input(path: Path) -> Input:
    """The rollouts or the Harbor trials in ``path``, whichever it holds; one clear BadInput
    line when it holds neither."""
    if not path.is_dir():
        raise BadInput(f"{path} is not a directory (expected {EXPECTED})")
    if harbor_trials(path):
        return read_harbor_job(path)
    found = read_rollouts(path)
    if found.attempts:
        return found
    jobs = [p.name for p in sorted(path.iterdir()) if p.is_dir() and harbor_trials(p)]
    if jobs:
        raise BadInput(f"{path} holds Harbor job dirs ({', '.join(jobs[:3])}{', ...' if len(jobs) > 3 else ''}), "
                       f"not trials: give one of them, e.g. {path / jobs[0]}")
    raise BadInput(f"{path} holds no rollouts and no Harbor trials (expected {EXPECTED})")


# -- cligym rollout ------------------------------------------------------------------------


def read_rollouts(rollout_dir: Path) -> Input:
    """Every attempt folder holding both records; those holding only one are incomplete."""
    attempts: list[Attempt] = []
    incomplete: list[str] = []
    folders = RolloutDir(rollout_dir).attempt_dirs()
    for folder in folders:
        trajectory_path, result_path = RolloutDir.records_in(folder)
        present = [trajectory_path.is_file(), result_path.is_file()]
        if not all(present):
            if any(present):
                incomplete.append(str(folder.relative_to(rollout_dir)))
            continue
        result = load(RolloutResult, result_path)
        trajectory = load(Trajectory, trajectory_path, "ATIF trajectory")
        attempts.append(Attempt(trajectory=trajectory, task_id=result.task_id, attempt=result.attempt,
                                reward=result.reward, path=str(folder.relative_to(rollout_dir)), own=True))
    trials = len(attempts) + len(incomplete)
    return Input(source="rollout", attempts=attempts, trials=trials, incomplete=incomplete)


# -- Harbor job ------------------------------------------------------------------------------


def trial_reward(result: HarborTrialResult) -> tuple[float | None, str]:
    """The trial's reward as Harbor recorded it, or None and why there is none."""
    rewards = result.verifier_result.rewards if result.verifier_result else None
    error = result.exception_info.line() if result.exception_info else ""
    if not rewards:
        return None, error or "no verifier result (the verifier did not run)"
    if result.reward_valid is False:
        return None, "Harbor marks the reward invalid" + (f" ({error})" if error else "")
    if "reward" in rewards:
        return float(rewards["reward"]), ""
    if len(rewards) == 1:
        return float(next(iter(rewards.values()))), ""
    return None, f"the rewards {sorted(rewards)} name no 'reward'"


def trial_trajectory(trial: HarborTrialDir, result: HarborTrialResult) -> tuple[Trajectory | None, str]:
    """The trial's ATIF trajectory, or None and why there is no single one to read."""
    agent = result.agent_info.name if result.agent_info else "the agent"
    if result.step_results or trial.steps.is_dir():
        return None, "a multi-step trial: its steps' trajectories are not read"
    if not trial.trajectory.is_file():
        return None, f"no ATIF trajectory ({agent} wrote none to /logs/agent)"
    trajectory = load(Trajectory, trial.trajectory, "ATIF trajectory")
    if trajectory.continued_trajectory_ref:
        return None, (f"its trajectory continues in {trajectory.continued_trajectory_ref[:100]} (split at a "
                      f"summarization): the segments are not joined")
    steps = trajectory.agent_steps
    if steps and not any(step.tool_calls for step in steps):
        return None, (f"its {len(steps)} agent steps record no tool calls (as terminus-2 writes them with "
                      f"raw_content): what it ran cannot be checked")
    return trajectory, ""


def read_harbor_job(job_dir: Path) -> Input:
    """Every trial of a Harbor job; those without result.json (unfinished) are incomplete."""
    found = Input(source="harbor_job", attempts=[], trials=0)
    read: list[tuple[datetime, str, HarborTrialResult, Trajectory, float | None]] = []
    for folder in harbor_trials(job_dir):
        found.trials += 1
        trial = HarborTrialDir(folder)
        if not trial.result.is_file():
            found.incomplete.append(folder.name)
            continue
        result = load(HarborTrialResult, trial.result, "Harbor trial result")
        if result.exception_info is not None:
            found.exceptions[folder.name] = result.exception_info.line()
        reward, why = trial_reward(result)
        if reward is None:
            found.no_reward[folder.name] = why
        trajectory, missing = trial_trajectory(trial, result)
        if trajectory is None:
            found.no_trajectory[folder.name] = missing
            continue
        started = result.started_at or datetime.min.replace(tzinfo=timezone.utc)
        if started.tzinfo is None:
            started = started.replace(tzinfo=timezone.utc)
        read.append((started, folder.name, result, trajectory, reward))
    counts: dict[str, int] = {}
    for _, name, result, trajectory, reward in sorted(read, key=lambda r: (r[0], r[1])):
        attempt = counts.get(result.task_name, 0)
        counts[result.task_name] = attempt + 1
        found.attempts.append(Attempt(trajectory=trajectory, task_id=result.task_name, attempt=attempt,
                                      reward=reward, path=name, own=False, no_reward=found.no_reward.get(name, "")))
    found.attempts.sort(key=lambda a: a.path)
    return found
