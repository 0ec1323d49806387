"""The curate stage: repair trajectories become a fine-tuning set.

Input: a ``cligym rollout`` directory (ROLLOUT_DIR/<task>/<attempt>/trajectory.json, ATIF, and
result.json) or a Harbor job directory (``harbor run``'s JOBS/<job>/<trial>/, see
:mod:`cligym.curate.inputs`), told apart by their layout; the summary's ``source`` says which.
Every trajectory gets one decision, in this order:

1. ``not_successful``: the reward is not 1;
2. ``too_short``: fewer than ``min_steps`` agent steps;
3. ``cheating``: a tool call fired one of the cheating rules (see :mod:`cligym.curate.filters`);
4. otherwise ``kept``.

Loops (the same action repeated ``loop_repeat`` times with the same observation) are flagged,
not dropped; their rate is reported among failed trajectories (as in the CLI-Gym paper) and
among all. Cheating is also counted over every trajectory (``cheating_detected``), since an
attempt to cheat that failed, or was short, is still worth knowing about. Harbor trials with
no trajectory to read, or no valid reward, are counted and named in the summary.

Output: OUT/sft.jsonl, one row per kept trajectory (``datasets.load_dataset("json", ...)``
reads it; see :func:`sft_row`): ``messages`` (OpenAI chat messages), ``tools`` (the tool
definitions the model was offered, None when its agent offered none), ``tools_from``,
``reasoning_history``, ``task_id``, ``attempt``, ``reward``; and OUT/summary.json, a
:class:`CurationSummary` with every decision and the commands that fired.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from cligym.agents.tools import TOOLS
from cligym.agents.trajectory import reasoning_history, to_chat_messages
from cligym.curate.filters import (
    CHEAT_RULES,
    cheating_reason,
    find_cheating,
    find_loop,
)
from cligym.curate.inputs import Attempt, Input, read_input
from cligym.errors import BadInput
from cligym.layout import CurateDir
from cligym.models.curate import CurationSummary, Decision, TrajectoryDecision
from cligym.models.io import save, write_atomic
from cligym.models.trajectory import Trajectory

#: terminus-2's tools as its trajectories record them: the model answers in a JSON (or XML)
#: format of its own, which Harbor parses into keystrokes and records as ``bash_command``
#: calls (one per command) and a ``mark_task_complete`` call. A row's messages then call
#: these, so its ``tools`` define them (the definitions Harbor's recording implies).
TERMINUS_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "bash_command",
        "description": "Send keystrokes to the terminal (a tmux session running bash), then wait.",
        "parameters": {"type": "object", "properties": {
            "keystrokes": {"type": "string", "description": "the keys to send; end a command with a newline"},
            "duration": {"type": "number", "description": "seconds to wait for the output"}},
            "required": ["keystrokes"]}}},
    {"type": "function", "function": {
        "name": "mark_task_complete", "description": "Say that the task is done.",
        "parameters": {"type": "object", "properties": {}}}},
]
#: Agents whose tool set is known although their trajectories record none, and what it is.
KNOWN_AGENT_TOOLS: dict[str, list[dict[str, Any]]] = {"terminus-2": TERMINUS_TOOLS}


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def agent_tools(trajectory: Trajectory, own: bool) -> tuple[list[dict[str, Any]] | None, str]:
    """The tools the trajectory's model was offered, and where that comes from: its own
    ``agent.tool_definitions``; else, for cligym's own agent, cligym's current ``TOOLS`` (which
    may differ from what an older run offered); else the known tool set of its agent (the
    calls its recorded messages make); else None, unknown. Never cligym's tools for another
    agent."""
    recorded = trajectory.agent.tool_definitions
    if recorded is not None:
        return recorded, "trajectory"
    if own:
        return TOOLS, "cligym.agents.tools.TOOLS"
    name = trajectory.agent.name
    if name in KNOWN_AGENT_TOOLS:
        parser = str((trajectory.agent.extra or {}).get("parser") or "json")
        return KNOWN_AGENT_TOOLS[name], f"{name}: its calls as Harbor records them (the model answers in {parser})"
    return None, f"unknown: {name} recorded no tool definitions"


def sft_row(attempt: Attempt) -> dict[str, Any]:
    """One SFT row. ``tools`` and ``tools_from``: see :func:`agent_tools`.
    ``reasoning_history`` is the convention the messages' ``reasoning_content`` follows, see
    :func:`to_chat_messages`."""
    trajectory = attempt.trajectory
    tools, tools_from = agent_tools(trajectory, attempt.own)
    return {"messages": to_chat_messages(trajectory), "tools": tools, "tools_from": tools_from,
            "reasoning_history": reasoning_history(trajectory),
            "task_id": attempt.task_id, "attempt": attempt.attempt, "reward": attempt.reward}


def judge(attempt: Attempt, *, min_steps: int, loop_repeat: int) -> TrajectoryDecision:
    trajectory = attempt.trajectory
    steps = sum(1 for step in trajectory.steps if step.source == "agent")
    cheating = find_cheating(trajectory)
    decision: Decision
    if attempt.reward != 1:
        decision, reason = "not_successful", (f"no reward: {attempt.no_reward}" if attempt.no_reward
                                              else f"reward {attempt.reward}")
    elif steps < min_steps:
        decision, reason = "too_short", f"{steps} agent steps, fewer than {min_steps}"
    elif cheating:
        decision, reason = "cheating", cheating_reason(cheating)
    else:
        decision, reason = "kept", ""
    return TrajectoryDecision(task_id=attempt.task_id, attempt=attempt.attempt, path=attempt.path,
                              reward=attempt.reward, agent_steps=steps, decision=decision, reason=reason,
                              cheating=cheating, loop=find_loop(trajectory, loop_repeat))


def decide(attempts: list[Attempt], *, min_steps: int, loop_repeat: int) -> tuple[list[TrajectoryDecision],
                                                                                 list[str]]:
    """Every attempt's decision, and the kept ones' SFT rows (JSON lines)."""
    decisions: list[TrajectoryDecision] = []
    rows: list[str] = []
    seen: set[tuple[str, str]] = set()  # (task, its kept messages): -k attempts at temperature 0 repeat
    for attempt in attempts:
        decision = judge(attempt, min_steps=min_steps, loop_repeat=loop_repeat)
        row = sft_row(attempt) if decision.decision == "kept" else None
        if row is not None:
            said = (attempt.task_id, json.dumps(row["messages"], sort_keys=True))
            if said in seen:
                decision.decision, row = "duplicate", None
                decision.reason = "repeats a kept attempt of the same task word for word"
            seen.add(said)
        decisions.append(decision)
        if row is not None:
            rows.append(json.dumps(row, ensure_ascii=False))
    return decisions, rows


def summarize(found: Input, decisions: list[TrajectoryDecision], *, input_dir: Path, out_dir: Path,
              min_steps: int, loop_repeat: int) -> CurationSummary:
    by_decision = Counter(v.decision for v in decisions)
    failed = [v for v in decisions if v.reward != 1]
    by_rule = Counter(rule for v in decisions if v.decision == "cheating" for rule in {h.rule for h in v.cheating})
    detected = Counter(rule for v in decisions for rule in {h.rule for h in v.cheating})
    loops_failures = sum(1 for v in failed if v.loop is not None)
    loops_all = sum(1 for v in decisions if v.loop is not None)
    return CurationSummary(
        rollout_dir=str(input_dir),
        source=found.source,
        out_dir=str(out_dir),
        min_steps=min_steps,
        loop_repeat=loop_repeat,
        trials=found.trials,
        trajectories=len(decisions),
        successful=len(decisions) - len(failed),
        failed=len(failed),
        kept=by_decision["kept"],
        dropped={reason: by_decision[reason] for reason in ("not_successful", "too_short", "cheating", "duplicate")},
        cheating={rule: by_rule[rule] for rule in CHEAT_RULES},
        cheating_detected={rule: detected[rule] for rule in CHEAT_RULES},
        incomplete=found.incomplete,
        no_trajectory=found.no_trajectory,
        no_reward=found.no_reward,
        exceptions=found.exceptions,
        loops_failures=loops_failures,
        loops_all=loops_all,
        loop_rate_failures=_rate(loops_failures, len(failed)),
        loop_rate_all=_rate(loops_all, len(decisions)),
        decisions=decisions,
    )


def curate(input_dir: Path, out_dir: Path, min_steps: int = 20, loop_repeat: int = 3) -> CurationSummary:
    """Curate a rollout dir or a Harbor job dir (whichever ``input_dir`` is) into OUT."""
    input_dir, out_dir = Path(input_dir), Path(out_dir)
    if min_steps < 0:
        raise BadInput("--min-steps must not be negative")
    if loop_repeat < 2:
        raise BadInput("--loop-repeat must be at least 2")
    found = read_input(input_dir)
    if not found.attempts and not found.no_trajectory:
        raise BadInput(f"{input_dir} holds no trajectories and no finished trials")
    decisions, rows = decide(found.attempts, min_steps=min_steps, loop_repeat=loop_repeat)
    summary = summarize(found, decisions, input_dir=input_dir, out_dir=out_dir, min_steps=min_steps,
                        loop_repeat=loop_repeat)
    target = CurateDir(out_dir)
    write_atomic(target.sft, "".join(row + "\n" for row in rows))
    save(summary, target.summary)
    return summary
