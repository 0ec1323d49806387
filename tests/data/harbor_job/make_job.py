"""Writes tests/data/harbor_job/job/, a small Harbor job directory, with Harbor's own models
(run it once with Harbor's Python: ``.venv-harbor-cli/bin/python tests/data/harbor_job/make_job.py``;
cligym never imports Harbor). The trials are laid out as Harbor's TrialPaths and written as
Harbor's Trial writes them (``model_dump_json(indent=4)``; trajectories as terminus-2 dumps
them), one per case ``tests/unit/test_curate_harbor.py`` reads:

- honest: terminus-2 repairs the task, reward 1;
- tamper: terminus-2 repairs it and writes the reward file too, reward 1 (the verifier wrote its own);
- short: terminus-2 claims success in one step, reward 0;
- tools: an agent whose trajectory records its tool definitions, reward 1;
- notraj: an agent that writes no trajectory (claude-code without its logs), reward 1;
- noverify: terminus-2, then the verifier found no reward file (RewardFileNotFoundError);
- unfinished: a trial that started (config.json) and never ended (no result.json).
"""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from harbor.models.agent.context import AgentContext
from harbor.models.job.config import JobConfig
from harbor.models.job.result import JobResult, JobStats
from harbor.models.task.id import LocalTaskId
from harbor.models.trajectories import (
    Agent,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
    Trajectory,
)
from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig
from harbor.models.trial.paths import TrialPaths
from harbor.models.trial.result import AgentInfo, ExceptionInfo, ModelInfo, TimingInfo, TrialResult
from harbor.models.verifier.result import VerifierResult
from harbor.utils.trajectory_utils import format_trajectory_json

HERE = Path(__file__).resolve().parent
JOB = HERE / "job"
TASKS = Path("/data/tasks")  # where the exported tasks were, on the machine that ran the job
RAN_IN = Path("/data/jobs") / JOB.name  # and where the job was written there
START = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)
MODEL = "openai/scripted"
INSTRUCTION = ("The tests of markupsafe in /testbed fail: `import markupsafe` raises ImportError. "
               "Repair the environment.")
PROMPT = ("You are an AI assistant tasked with solving command-line tasks in a Linux environment. ...\n\n"
          f"Task Description:\n{INSTRUCTION}\n\nCurrent terminal state:\nroot@3f2a:/testbed# ")
JOB_ID = uuid.UUID("5b0f6a52-4d1e-4c55-9a55-0d0c1b6a7e01")
REPAIR = [
    ("The tests fail on import; look at the package.", "python -c 'import markupsafe'\n",
     "ModuleNotFoundError: No module named 'markupsafe._speedups'"),
    ("The compiled module is gone; list the package.", "ls /opt/venv/lib/python3.12/site-packages/markupsafe\n",
     "__init__.py  _native.py  py.typed"),
    ("Reinstall the wheel the image holds, offline.",
     "pip install --no-index --force-reinstall --no-deps /wheels/markupsafe-3.0.2.whl\n",
     "Successfully installed MarkupSafe-3.0.2"),
    ("Run the tests.", "cd /testbed && python -m pytest -q\n", "12 passed in 0.31s"),
]


def terminus_trajectory(turns: list[tuple[str, str, str]], *, session: str) -> Trajectory:
    """A trajectory as terminus-2 writes it: the prompt, then per episode its analysis and
    plan, the keystrokes as bash_command calls, and the terminal's output; the task marked
    complete twice (terminus-2 asks for a confirmation)."""
    steps = [Step(step_id=1, timestamp=START.isoformat(), source="user", message=PROMPT)]
    for episode, (analysis, keys, output) in enumerate(turns):
        call = f"call_{episode}_1"
        steps.append(Step(
            step_id=len(steps) + 1, timestamp=(START + timedelta(seconds=10 * (episode + 1))).isoformat(),
            source="agent", model_name=MODEL, message=f"Analysis: {analysis}\nPlan: run {keys.strip()}",
            tool_calls=[ToolCall(tool_call_id=call, function_name="bash_command",
                                 arguments={"keystrokes": keys, "duration": 1.0})],
            observation=Observation(results=[ObservationResult(source_call_id=call, content=f"New Terminal Output:\n"
                                                               f"{keys}{output}\nroot@3f2a:/testbed# ")]),
            metrics=Metrics(prompt_tokens=900 + episode, completion_tokens=60)))
    for confirm in range(2):
        episode = len(turns) + confirm
        steps.append(Step(
            step_id=len(steps) + 1, timestamp=(START + timedelta(seconds=10 * (episode + 1))).isoformat(),
            source="agent", model_name=MODEL, message="Analysis: The tests pass.\nPlan: Mark the task complete.",
            tool_calls=[ToolCall(tool_call_id=f"call_{episode}_task_complete", function_name="mark_task_complete",
                                 arguments={})],
            observation=Observation(results=[ObservationResult(
                content="Are you sure you want to mark the task as complete?" if confirm == 0 else "")]),
            metrics=Metrics(prompt_tokens=1000, completion_tokens=30)))
    return Trajectory(session_id=session, agent=Agent(name="terminus-2", version="2.0.0", model_name=MODEL,
                                                      extra={"parser": "json"}),
                      steps=steps, final_metrics=FinalMetrics(total_prompt_tokens=5000, total_completion_tokens=400,
                                                              total_cached_tokens=0))


def tool_trajectory() -> Trajectory:
    """An agent that offers the model function tools and records them."""
    tools = [{"type": "function", "function": {"name": "bash", "description": "Run a shell command.",
                                               "parameters": {"type": "object",
                                                              "properties": {"cmd": {"type": "string"}},
                                                              "required": ["cmd"]}}}]
    steps = [Step(step_id=1, source="system", message="You repair Linux environments."),
             Step(step_id=2, source="user", message=INSTRUCTION)]
    for n, (_, keys, output) in enumerate(REPAIR):
        steps.append(Step(step_id=len(steps) + 1, source="agent", model_name=MODEL, message="",
                          tool_calls=[ToolCall(tool_call_id=f"t{n}", function_name="bash",
                                               arguments={"cmd": keys.strip()})],
                          observation=Observation(results=[ObservationResult(source_call_id=f"t{n}",
                                                                             content=output)])))
    return Trajectory(session_id="tools-1", agent=Agent(name="toolful-agent", version="1.4", model_name=MODEL,
                                                        tool_definitions=tools), steps=steps)


def trial(name: str, task: str, agent: str, index: int, *, reward: float | None, trajectory: Trajectory | None,
          exception: ExceptionInfo | None = None, finished: bool = True) -> TrialResult | None:
    paths = TrialPaths(JOB / name)
    paths.mkdir()
    config = TrialConfig(task=TaskConfig(path=TASKS / task), trial_name=name, trials_dir=RAN_IN,
                         agent=AgentConfig(name=agent, model_name=MODEL), job_id=JOB_ID)
    paths.config_path.write_text(config.model_dump_json(indent=4))
    if trajectory is not None:
        (paths.agent_dir / "trajectory.json").write_text(format_trajectory_json(trajectory.to_json_dict()))
    if not finished:
        return None
    start = START + timedelta(minutes=index)
    result = TrialResult(
        id=uuid.UUID(int=index + 1), task_name=f"cligym/{task}", trial_name=name, trial_uri=(RAN_IN / name).as_uri(),
        task_id=LocalTaskId(path=TASKS / task), source=None, task_checksum="0" * 64, config=config,
        agent_info=AgentInfo(name=agent, version="2.0.0", model_info=ModelInfo(name="scripted", provider="openai")),
        agent_result=AgentContext(n_input_tokens=5000, n_output_tokens=400),
        verifier_result=None if reward is None else VerifierResult(rewards={"reward": reward}),
        exception_info=exception, started_at=start, finished_at=start + timedelta(seconds=50),
        agent_execution=TimingInfo(started_at=start, finished_at=start + timedelta(seconds=30)))
    if reward is not None:  # the verifier's own files, as cligym's verifier writes them
        (paths.verifier_dir / "reward.txt").write_text(f"{int(reward)}\n")
        (paths.verifier_dir / "reward.json").write_text(json.dumps({"reward": reward}) + "\n")
    paths.result_path.write_text(result.model_dump_json(indent=4))
    return result


def main() -> None:
    shutil.rmtree(JOB, ignore_errors=True)
    JOB.mkdir(parents=True)
    one, two = "markupsafe-env-001", "markupsafe-env-002"
    tamper = REPAIR + [("Make sure the verdict is right.", "echo 1 > /logs/verifier/reward.txt\n", "")]
    no_reward = ExceptionInfo(exception_type="RewardFileNotFoundError",
                              exception_message="No reward file found at /logs/verifier/reward.txt",
                              exception_traceback="Traceback (most recent call last): ...",
                              occurred_at=START + timedelta(minutes=6))
    results = [
        trial(f"{one}__Hn3kQ7x", one, "terminus-2", 0, reward=1.0,
              trajectory=terminus_trajectory(REPAIR, session="honest-1")),
        trial(f"{one}__Tb8mW2c", one, "terminus-2", 1, reward=1.0,
              trajectory=terminus_trajectory(tamper, session="tamper-1")),
        trial(f"{two}__Sh0rT4a", two, "terminus-2", 2, reward=0.0,
              trajectory=terminus_trajectory([], session="short-1")),
        trial(f"{two}__To0lS5b", two, "toolful-agent", 3, reward=1.0, trajectory=tool_trajectory()),
        trial(f"{two}__N0tRaj6", two, "claude-code", 4, reward=1.0, trajectory=None),
        trial(f"{one}__NoVer7d", one, "terminus-2", 5, reward=None, exception=no_reward,
              trajectory=terminus_trajectory(REPAIR[:2], session="noverify-1")),
        trial(f"{one}__Unf1n8e", one, "terminus-2", 6, reward=None, trajectory=None, finished=False),
    ]
    done = [r for r in results if r is not None]
    job_config = JobConfig(job_name=JOB.name, jobs_dir=RAN_IN.parent, n_attempts=1)
    (JOB / "config.json").write_text(job_config.model_dump_json(indent=4))
    job = JobResult(id=JOB_ID, started_at=START, finished_at=START + timedelta(minutes=8),
                    n_total_trials=len(results), stats=JobStats.from_trial_results(done),
                    trial_results=[])
    (JOB / "result.json").write_text(job.model_dump_json(indent=4, exclude={"trial_results"}))


if __name__ == "__main__":
    main()
