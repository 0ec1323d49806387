"""The agents a rollout can run, behind one interface and looked up by name.

An agent gets a running container of the task's image, the task's instruction and the
trajectory recorder; it works in the container and records what it did. The task's own
verifier runs afterwards, whatever the agent did. They are found by name in
:mod:`cligym.rollout.registry`.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import ClassVar

from cligym.agents.loop import AgentLimits, AgentOutcome, run_agent
from cligym.agents.tools import ToolExecutor
from cligym.agents.trajectory import TrajectoryRecorder
from cligym.errors import BadInput
from cligym.harness.trial import ORACLE_SCRIPT, run_oracle
from cligym.layout import TaskDir
from cligym.runtime import Session

REPAIR_SYSTEM = """\
You are working as root in a Linux container that holds a Python project. Its test suite
used to pass; now some tests fail because something in the environment is broken. Use the
tools to find the cause and repair the environment. Do not edit, skip or delete the tests,
and do not download anything: there is no network. Call finish when the failing tests pass."""


#: How an agent that takes one step without a model ends.
DONE = AgentOutcome(stop_reason="finished", steps=1, prompt_tokens=0, completion_tokens=0, seconds=0.0)


class RolloutAgent(ABC):
    """One way of attempting a task."""

    #: the ``--agent`` value (its entry in :data:`cligym.rollout.registry.AGENTS`)
    name: ClassVar[str]
    #: whether it needs a model client (``--model`` and ``--base-url``)
    needs_model: ClassVar[bool] = False

    def __init__(self, client=None, limits: AgentLimits | None = None) -> None:
        if self.needs_model and client is None:
            raise BadInput(f"--agent {self.name} needs a model (--model and --base-url)")
        self.client = client
        self.limits = limits or AgentLimits()
        #: set when the rollout is stopping: a running attempt ends before its next step
        self.stop = threading.Event()

    @property
    def model_name(self) -> str | None:
        return getattr(getattr(self.client, "config", None), "model", None)

    def stop_now(self) -> None:
        """The rollout is stopping: running attempts end, and so do the model's waits."""
        self.stop.set()
        if self.client is not None and hasattr(self.client, "stop"):
            self.client.stop()

    @abstractmethod
    def run(self, session: Session, task: TaskDir, instruction: str, recorder: TrajectoryRecorder, *,
            episode: int = 0) -> AgentOutcome:
        """Episode ``episode`` (of k) of the task in ``session``, recording every step."""


class NopAgent(RolloutAgent):
    """Does nothing: the tests must still fail."""

    name = "nop"

    def run(self, session: Session, task: TaskDir, instruction: str, recorder: TrajectoryRecorder, *,
            episode: int = 0) -> AgentOutcome:
        recorder.user(instruction)
        recorder.agent("(no action)")
        return DONE


class OracleAgent(RolloutAgent):
    """Runs the task's reference solution, as Harbor's oracle does."""

    name = "oracle"

    def run(self, session: Session, task: TaskDir, instruction: str, recorder: TrajectoryRecorder, *,
            episode: int = 0) -> AgentOutcome:
        recorder.user(instruction)
        fixed = run_oracle(session, task)
        recorder.agent("Running the reference solution.",
                       tool_calls=[("call_1", "execute_bash", {"command": ORACLE_SCRIPT})],
                       observations=[("call_1", fixed.output[-4000:])])
        return DONE


class LlmAgent(RolloutAgent):
    """A model with the repair tools, driven by :func:`cligym.agents.loop.run_agent`."""

    name = "llm"
    needs_model = True

    def run(self, session: Session, task: TaskDir, instruction: str, recorder: TrajectoryRecorder, *,
            episode: int = 0) -> AgentOutcome:
        workdir = session.exec(["pwd"], timeout=60).output.strip() or "/"
        executor = ToolExecutor(session, workdir=workdir, command_timeout=self.limits.command_timeout,
                                max_output=self.limits.max_output)
        # a fatal model error (unreachable, key refused, retries exhausted) is raised here:
        # the rollout stops with its one line and writes nothing for this attempt
        try:
            return run_agent(self.client, executor, system=REPAIR_SYSTEM, task=instruction, limits=self.limits,
                             recorder=recorder, stop=self.stop, episode=episode)
        finally:  # the verifier sees the files the agent left, not its shell or what runs in it
            executor.close()

