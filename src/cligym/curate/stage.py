"""The curate stage: repair rollouts become a fine-tuning set.

Input: ROLLOUT_DIR/<task>/<attempt>/trajectory.json (ATIF) and result.json (RolloutResult).
Every trajectory gets one decision, in this order:

1. ``not_successful``: the reward is not 1;
2. ``too_short``: fewer than ``min_steps`` agent steps;
3. ``cheating``: a tool call fired one of the cheating rules (see :mod:`cligym.curate.filters`);
4. otherwise ``kept``.

Loops (the same action repeated ``loop_repeat`` times with the same observation) are flagged,
not dropped; their rate is reported among failed trajectories (as in the CLI-Gym paper) and
among all. Cheating is also counted over every trajectory (``cheating_detected``), since an
attempt to cheat that failed, or was short, is still worth knowing about.

Output: OUT/sft.jsonl, one row per kept trajectory (``datasets.load_dataset("json", ...)``
reads it; see :func:`sft_row`): ``messages`` (OpenAI chat messages), ``tools`` (the tool
definitions the model was offered), ``tools_from``, ``reasoning_history``, ``task_id``,
``attempt``, ``reward``; and OUT/summary.json, a :class:`CurationSummary` with every decision
and the commands that fired.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from cligym.agents.tools import TOOLS
from cligym.agents.trajectory import reasoning_history, to_chat_messages
from cligym.curate.filters import (
    CHEAT_RULES,
    cheating_reason,
    find_cheating,
    find_loop,
)
from cligym.errors import BadInput
from cligym.layout import CurateDir, RolloutDir
from cligym.models.curate import CurationSummary, Decision, TrajectoryDecision
from cligym.models.io import load, save, write_atomic
from cligym.models.rollout import RolloutResult
from cligym.models.trajectory import Trajectory


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def rollout_attempts(rollout_dir: Path) -> tuple[list[Path], list[str]]:
    """The attempt folders holding both records, and those holding only one (unfinished)."""
    if not rollout_dir.is_dir():
        raise BadInput(f"{rollout_dir} is not a directory (expected a rollout dir: <task>/<attempt>/trajectory.json)")
    complete, incomplete = [], []
    for folder in RolloutDir(rollout_dir).attempt_dirs():
        present = [path.is_file() for path in RolloutDir.records_in(folder)]
        if all(present):
            complete.append(folder)
        elif any(present):
            incomplete.append(str(folder.relative_to(rollout_dir)))
    return complete, incomplete


def sft_row(trajectory: Trajectory, result: RolloutResult) -> dict:
    """One SFT row. ``tools`` are the trajectory's own ``agent.tool_definitions``; a trajectory
    recorded before cligym wrote them gets cligym's current ``TOOLS``, which may differ from
    what the model was offered then, and ``tools_from`` says which. ``reasoning_history`` is the
    convention the messages' ``reasoning_content`` follows, see :func:`to_chat_messages`."""
    recorded = trajectory.agent.tool_definitions
    return {"messages": to_chat_messages(trajectory),
            "tools": recorded if recorded is not None else TOOLS,
            "tools_from": "trajectory" if recorded is not None else "cligym.agents.tools.TOOLS",
            "reasoning_history": reasoning_history(trajectory),
            "task_id": result.task_id, "attempt": result.attempt, "reward": result.reward}


def judge(trajectory: Trajectory, result: RolloutResult, path: str, *, min_steps: int,
          loop_repeat: int) -> TrajectoryDecision:
    steps = sum(1 for step in trajectory.steps if step.source == "agent")
    cheating = find_cheating(trajectory)
    decision: Decision
    if result.reward != 1:
        decision, reason = "not_successful", f"reward {result.reward}"
    elif steps < min_steps:
        decision, reason = "too_short", f"{steps} agent steps, fewer than {min_steps}"
    elif cheating:
        decision, reason = "cheating", cheating_reason(cheating)
    else:
        decision, reason = "kept", ""
    return TrajectoryDecision(task_id=result.task_id, attempt=result.attempt, path=path, reward=result.reward,
                             agent_steps=steps, decision=decision, reason=reason, cheating=cheating,
                             loop=find_loop(trajectory, loop_repeat))


def curate(rollout_dir: Path, out_dir: Path, min_steps: int = 20, loop_repeat: int = 3) -> CurationSummary:
    rollout_dir, out_dir = Path(rollout_dir), Path(out_dir)
    if min_steps < 0:
        raise BadInput("--min-steps must not be negative")
    if loop_repeat < 2:
        raise BadInput("--loop-repeat must be at least 2")
    folders, incomplete = rollout_attempts(rollout_dir)
    if not folders:
        raise BadInput(f"{rollout_dir} holds no rollouts (expected <task>/<attempt>/trajectory.json and result.json)")

    decisions: list[TrajectoryDecision] = []
    rows: list[str] = []
    seen: set[tuple[str, str]] = set()  # (task, its kept messages): -k attempts at temperature 0 repeat
    for folder in folders:
        trajectory_path, result_path = RolloutDir.records_in(folder)
        result = load(RolloutResult, result_path)
        trajectory = load(Trajectory, trajectory_path, "ATIF trajectory")
        decision = judge(trajectory, result, str(folder.relative_to(rollout_dir)),
                        min_steps=min_steps, loop_repeat=loop_repeat)
        row = sft_row(trajectory, result) if decision.decision == "kept" else None
        if row is not None:
            said = (result.task_id, json.dumps(row["messages"], sort_keys=True))
            if said in seen:
                decision.decision, row = "duplicate", None
                decision.reason = "repeats a kept attempt of the same task word for word"
            seen.add(said)
        decisions.append(decision)
        if row is not None:
            rows.append(json.dumps(row, ensure_ascii=False))

    by_decision = Counter(v.decision for v in decisions)
    failed = [v for v in decisions if v.reward != 1]
    by_rule = Counter(rule for v in decisions if v.decision == "cheating" for rule in {h.rule for h in v.cheating})
    detected = Counter(rule for v in decisions for rule in {h.rule for h in v.cheating})
    loops_failures = sum(1 for v in failed if v.loop is not None)
    loops_all = sum(1 for v in decisions if v.loop is not None)
    summary = CurationSummary(
        rollout_dir=str(rollout_dir),
        out_dir=str(out_dir),
        min_steps=min_steps,
        loop_repeat=loop_repeat,
        trajectories=len(decisions),
        successful=len(decisions) - len(failed),
        failed=len(failed),
        kept=by_decision["kept"],
        dropped={reason: by_decision[reason] for reason in ("not_successful", "too_short", "cheating", "duplicate")},
        cheating={rule: by_rule[rule] for rule in CHEAT_RULES},
        cheating_detected={rule: detected[rule] for rule in CHEAT_RULES},
        incomplete=incomplete,
        loops_failures=loops_failures,
        loops_all=loops_all,
        loop_rate_failures=_rate(loops_failures, len(failed)),
        loop_rate_all=_rate(loops_all, len(decisions)),
        decisions=decisions,
    )
    target = CurateDir(out_dir)
    write_atomic(target.sft, "".join(row + "\n" for row in rows))
    save(summary, target.summary)
    return summary
