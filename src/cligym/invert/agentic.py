"""Inversion by an LLM agent (the paper's method), held to the operator path's rules.

One attempt:
1. query generation (``cligym.invert.query``): 1–3 directions and up to 200 gold tests
   become a degradation task with ≤ 50 selected tests; the memory pool is every title the
   run has made so far;
2. the agent degrades a container of the gold image with the tools of ``cligym.agents``
   and writes the Dockerfile lines that redo its changes to ``DOCKERFILE_PATH``; its steps
   are saved as an ATIF trajectory;
3. the selected tests run in the agent's container: failing ones are FAIL_TO_PASS, passing
   ones PASS_TO_PASS, a test command that cannot run makes all FAIL_TO_PASS, none failing
   discards the attempt;
4. ΔD is the agent's RUN lines (other instructions are left out and recorded: an ENV line,
   for one, cannot be undone by a repair script); gold + ΔD is built from scratch and must
   fail exactly the same tests (the reproduction rate is reported);
5. the recovery turn: the agent, in its container, writes the repair an admin would run
   (``RECOVERY_TURN``, ``RECOVERY_PATH``);
6. ``check_broken_state`` as for operators: a repeat run, the leak scan, no test file
   touched, and a repair proven in a fresh container with no network: the agent's own
   (refused untried when it carries more than ``CARRY_LIMIT`` bytes of gold), else one
   derived from the filesystem difference with only what the image holds (a reinstall
   from its wheelhouse, a mode set back, an added path removed, at most ``CARRY_LIMIT``
   bytes of gold restored). A state neither repairs is discarded (``no_offline_repair``,
   with why each failed); a kept task's ``offline_fair`` is measured as every task's is.
A model failure of the endpoint (unreachable, key refused, retries exhausted) stops the
run with its one line; the attempt it interrupted is redone when the run is resumed. A
failure of one request (e.g. a conversation too long for the model) ends that attempt's
agent (stop reason ``model_error``) or discards its query; the run goes on.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from cligym import __version__
from cligym.agents.client import ChatClient, ModelError
from cligym.agents.loop import AgentLimits, run_agent
from cligym.agents.tools import ToolExecutor
from cligym.agents.trajectory import TrajectoryRecorder
from cligym.errors import BadInput, CligymError, Fatal
from cligym.harness.testrun import run_tests_in_session
from cligym.invert.context import RunContext, Stopped, classify, open_run, sample_tests
from cligym.invert.dockerfile import parse_dockerfile
from cligym.invert.operators.package_files import installed_files
from cligym.invert.operators.probing import dist_tops, reinstall_line, site_packages
from cligym.invert.parallel import run_attempts
from cligym.invert.proposal import Degrader, Proposal, Try
from cligym.invert.query import QueryError, generate_query, sample_directions
from cligym.models.probe import Probe
from cligym.models.run import Summary
from cligym.models.timing import PhaseSeconds
from cligym.models.task import (
    AgentRun,
    AttemptNotes,
    Candidate,
    DegradationQuery,
    TaskFields,
)
from cligym.runtime import Runtime
from cligym.ui import Reporter
from cligym.verify.carried import CARRY_LIMIT
from cligym.verify.solution import derive_solution

DOCKERFILE_PATH = "/cligym-out/Dockerfile"
RECOVERY_PATH = "/cligym-out/recover.sh"
AGENT_NAME = "cligym-inverter"

INVERT_SYSTEM = """\
You are a reliability engineer running a fault-injection exercise. You work as root in a
disposable Linux container with no network; nothing in it matters outside this exercise.
Carry out the assignment you are given with the tools, check the result by running the
tests, then record what you changed as Dockerfile lines and call finish."""

#: The last turn of an agent a limit stopped before it recorded its changes, while the
#: selected tests fail: its breakage may be good, and only the Dockerfile is missing.
LAST_TURN = """\
You have reached the limit of this exercise, and {failing} of the selected tests now fail.
Do not change anything more. Write the Dockerfile lines (RUN instructions) that redo every
change you made to {dockerfile} now, with one execute_bash call, then call finish."""
#: What that last turn may use.
LAST_TURN_LIMITS = {"max_steps": 3, "max_seconds": 120.0}

TASK_TEMPLATE = """\
Assignment: {title}

{description}

Expected effect: {expected_error}

The project {project} is at {workdir}. Its tests run as:
    cd {workdir} && {test_command} <test ids>
The tests this fault should make fail (other tests may keep passing):
{tests}

Rules:
- Do not edit, move or delete the test files. Change the environment instead.
- Leave nothing that gives the fault away: no backups or copies of the original files, no
  notes, no renamed files, no shell history, no package caches.
- Keep /bin/sh, bash, coreutils (timeout, base64, tar) and the C library working: the
  harness needs them.
- Make lasting changes in files. Exported shell variables do not outlive your session.

When the tests fail as intended, write to {dockerfile} the Dockerfile lines that redo your
changes. They are appended to the image you started from and built offline, so:
- only RUN instructions (no FROM, no ENV, no COPY), no comments;
- one instruction may continue over several lines with a trailing backslash; heredocs
  inside the Dockerfile are not supported (write file contents with printf or base64 -d);
- include every change that matters, in the order you made it, and nothing you did not do.
Then call finish."""

#: The turn after a verified breakage: the agent writes the repair an admin of the machine
#: would run, proven later in a fresh container of the broken image with no network.
RECOVERY_TURN = """\
The fault is in place: {failing} of the selected tests fail. Now write the repair an
administrator of this machine would run, as a POSIX shell script at {path}:
- it runs as root with sh in a fresh container of the broken image, with no network, and
  must make every selected test pass again;
- it may use only what the machine holds (its package manager offline, wheels or packages
  already on disk, files that are still there); it must not write out the original
  contents of what you changed (no base64 payloads, no here-documents of original files):
  such a repair teaches nothing;
- you may run it here to check it.
Then call finish."""
#: What that turn may use.
RECOVERY_LIMITS = {"max_steps": 8, "max_seconds": 300.0}


class AgentDegrader(Degrader):
    """Asks a model for a degradation task, then lets an agent carry it out in a container
    of the gold image; proposes the Dockerfile lines the agent wrote."""

    seed_prefix = "cligym-agent"

    def __init__(self, client: ChatClient, limits: AgentLimits, refine_rate: float, model: str | None, *,
                 lag: int = 1) -> None:
        self.client, self.limits, self.refine_rate, self.model = client, limits, refine_rate, model
        self.titles: dict[int, str] = {}  # each finished attempt's title
        #: attempt i's memory pool: the titles of attempts up to i - lag (lag: attempts at once)
        self.lag = lag
        self.stop = threading.Event()  # set by ``stop_now``

    def stop_now(self) -> None:
        """The run is stopping: running agents end at their next step, model waits at once."""
        self.stop.set()
        self.client.stop()

    def derived_solution(self, ctx: RunContext, report) -> str:
        """A repair from what the image holds: added paths removed, modes set back, the files
        of an installed distribution reinstalled from the image's wheelhouse; what else
        changed is restored from gold's bytes only up to ``CARRY_LIMIT`` (CligymError beyond)."""
        assert ctx.gold_session is not None, "the run opens its gold session before any attempt"
        return derive_solution(ctx.gold_session, ctx.probe.files, report, reinstall=image_reinstall(ctx.probe),
                               carry_limit=CARRY_LIMIT)

    def seen(self, candidate: Candidate) -> None:
        if candidate.query:
            self.titles[candidate.attempt] = candidate.query.title

    def memory(self, attempt: int) -> list[str]:
        return [self.titles[a] for a in sorted(self.titles) if a <= attempt - self.lag]

    def propose(self, ctx: RunContext, attempt: int, rng: random.Random, tries: list[Try]) -> Proposal:
        """``tries`` is empty: agent proposals do not ask for another try (``retry`` is false)."""
        sample = sample_tests(rng, ctx.gold, ctx.sample_size)
        directions = sample_directions(rng)
        refine = rng.random() < self.refine_rate
        seconds = PhaseSeconds()
        tokens = [0, 0]
        notes = AttemptNotes(origin="agent")
        started = time.monotonic()
        try:
            query, refined = generate_query(self.client, ctx.gold, directions, sample, self.memory(attempt),
                                            refine=refine, tokens=tokens, deadline=started + self.limits.max_seconds)
        except Fatal:
            raise  # the endpoint itself failed: stop the run
        except (QueryError, ModelError) as exc:
            if self.stop.is_set():
                raise Stopped(attempt) from exc
            seconds.query = time.monotonic() - started
            return _given_up(notes, seconds, tokens, [], "bad_query", str(exc))
        seconds.query = time.monotonic() - started
        notes.query, notes.refined = query, refined
        if self.stop.is_set():
            raise Stopped(attempt)
        try:
            first, written, recovery = self._degrade(ctx, attempt, query, notes, seconds, tokens)
        except Fatal:
            raise
        except CligymError as exc:
            if self.stop.is_set():
                raise
            return _given_up(notes, seconds, tokens, query.selected_tests, "error",
                             f"the agent's container failed: {exc}")
        if self.stop.is_set():
            raise Stopped(attempt)
        return self._proposal(query, first, written, recovery, notes, seconds, tokens)

    def _degrade(self, ctx: RunContext, attempt: int, query: DegradationQuery, notes: AttemptNotes,
                 seconds: PhaseSeconds, tokens: list[int]):
        """The agent's run in a fresh container of gold; then the selected tests there."""
        gold, limits = ctx.gold, self.limits
        started = time.monotonic()
        with ctx.runtime.session(gold.image) as session:
            recorder = TrajectoryRecorder(AGENT_NAME, __version__, self.model, str(uuid.uuid4()))
            executor = ToolExecutor(session, workdir=gold.workdir, command_timeout=limits.command_timeout,
                                    max_output=limits.max_output)
            task = TASK_TEMPLATE.format(
                title=query.title, description=query.description,
                expected_error=query.expected_error or "(not given)", project=gold.source.spec,
                workdir=gold.workdir, test_command=gold.test_command,
                tests="\n".join(f"- {t}" for t in query.selected_tests), dockerfile=DOCKERFILE_PATH,
            )
            history: list = []
            outcome = run_agent(self.client, executor, system=INVERT_SYSTEM, task=task, limits=limits,
                                recorder=recorder, history=history, stop=self.stop)
            tokens[0] += outcome.prompt_tokens
            tokens[1] += outcome.completion_tokens
            last = self._last_turn(session, executor, recorder, history, query, outcome, tokens, gold)
            seconds.agent = time.monotonic() - started
            written = session.get_file(DOCKERFILE_PATH)
            # what the harness put there (the shell, its files, the Dockerfile) is not part of the broken state
            executor.close()
            session.exec(["rm", "-rf", DOCKERFILE_PATH.rsplit("/", 1)[0]], timeout=60)
            started = time.monotonic()
            first = run_tests_in_session(session, gold.workdir, gold.test_command, query.selected_tests)
            seconds.run = time.monotonic() - started
            recovery = None
            failing = len(classify(first, query.selected_tests)[0])
            if written is not None and failing and not self.stop.is_set():
                started = time.monotonic()
                recovery = self._recovery_turn(session, recorder, history, failing, tokens, gold)
                seconds.recovery = time.monotonic() - started
            trajectory = ctx.run.trajectory(attempt)
            recorder.save(ctx.run.path / trajectory, {"stop_reason": outcome.stop_reason, "error": outcome.error})
            notes.agent = AgentRun(stop_reason=outcome.stop_reason, steps=outcome.steps, seconds=outcome.seconds,
                                       summary=outcome.summary[:1000], trajectory=trajectory, last_turn=last,
                                       recovery=recovery is not None)
        return first, written, recovery

    def _recovery_turn(self, session, recorder, history: list, failing: int, tokens: list[int], gold) -> str | None:
        """Ask the agent, in its container, for the repair of its breakage (``RECOVERY_TURN``);
        the script it wrote, or None."""
        executor = ToolExecutor(session, workdir=gold.workdir, command_timeout=self.limits.command_timeout,
                                max_output=self.limits.max_output)
        try:
            extra = run_agent(self.client, executor, system=INVERT_SYSTEM, recorder=recorder, history=history,
                              task=RECOVERY_TURN.format(failing=failing, path=RECOVERY_PATH),
                              limits=self.limits.model_copy(update=RECOVERY_LIMITS), stop=self.stop)
            tokens[0] += extra.prompt_tokens
            tokens[1] += extra.completion_tokens
            script = session.get_file(RECOVERY_PATH)
        finally:
            executor.close()
        return script.decode("utf-8", errors="replace") if script and script.strip() else None

    def _last_turn(self, session, executor, recorder, history: list, query: DegradationQuery, outcome,
                   tokens: list[int], gold) -> bool:
        """Ask an agent a limit stopped for its Dockerfile once more, when it wrote none and
        the selected tests fail; True when it was asked."""
        if outcome.stop_reason not in ("max_steps", "max_seconds", "max_tokens") or \
                session.get_file(DOCKERFILE_PATH) is not None:
            return False
        check = run_tests_in_session(session, gold.workdir, gold.test_command, query.selected_tests)
        failing = len(classify(check, query.selected_tests)[0])
        if not failing:
            return False
        limits = self.limits.model_copy(update=LAST_TURN_LIMITS)
        extra = run_agent(self.client, executor, system=INVERT_SYSTEM, recorder=recorder, history=history,
                          task=LAST_TURN.format(failing=failing, dockerfile=DOCKERFILE_PATH), limits=limits)
        tokens[0] += extra.prompt_tokens
        tokens[1] += extra.completion_tokens
        return True

    def _proposal(self, query: DegradationQuery, first, written: bytes | None, recovery: str | None,
                  notes: AttemptNotes, seconds: PhaseSeconds, tokens: list[int]) -> Proposal:
        selected = query.selected_tests
        f2p, p2p = classify(first, selected)
        notes.FAIL_TO_PASS, notes.PASS_TO_PASS = f2p, p2p
        notes.fail_fraction = round(len(f2p) / len(selected), 4)
        if not f2p:
            return _given_up(notes, seconds, tokens, selected, "no_failure",
                             "every selected test passed after the agent's run")
        if written is None:
            return _given_up(notes, seconds, tokens, selected, "no_dockerfile", f"the agent wrote no {DOCKERFILE_PATH}")
        lines, dropped = parse_dockerfile(written.decode("utf-8", errors="replace"))
        notes.dropped_lines = dropped
        if not lines:
            return _given_up(notes, seconds, tokens, selected, "no_dockerfile",
                             f"{DOCKERFILE_PATH} holds no RUN instruction")
        return Proposal(
            sample=selected, name="agent", dockerfile=lines, observed=first, keep_tests=True, derive_solution=True,
            solution=recovery or "", seconds=seconds, notes=_with_tokens(notes, tokens),
            task=TaskFields(origin="agent", query=query),
        )


def image_reinstall(probe: Probe) -> Callable[[str], str | None]:
    """path -> the line reinstalling, from a wheel in the image, the distribution whose
    files (its RECORD, or its top-level package's folder) hold the path; None for a path
    of no such distribution."""
    files = installed_files(probe)
    site = site_packages(probe)
    folders = {f"{site}/{top}/": dist for dist in {d.name: d for d in files.values()}.values()
               for top in dist_tops(dist)}

    def line(path: str) -> str | None:
        dist = files.get(path) or next((d for folder, d in folders.items() if path.startswith(folder)), None)
        return reinstall_line(probe, dist.name, dist.version) if dist else None

    return line


def _given_up(notes: AttemptNotes, seconds: PhaseSeconds, tokens: list[int], sample: list[str], kind: str,
              reason: str) -> Proposal:
    return Proposal(sample=sample, discard=(kind, reason), seconds=seconds, notes=_with_tokens(notes, tokens))


def _with_tokens(notes: AttemptNotes, tokens: list[int]) -> AttemptNotes:
    """The notes of an agent's attempt with the tokens it spent so far."""
    return notes.model_copy(update={"prompt_tokens": tokens[0], "completion_tokens": tokens[1]})


def invert_with_agent(
    gold_dir: Path,
    run_dir: Path,
    client: ChatClient | None,
    *,
    attempts: int,
    seed: int = 0,
    sample_size: int = 200,
    refine_rate: float = 0.5,
    limits: AgentLimits | None = None,
    runtime: Runtime | None = None,
    reporter: Reporter | None = None,
    workers: int = 1,
) -> Summary:
    """Invert a gold environment with an LLM agent; returns the run's summary. ``workers``
    attempts run at once (``cligym.invert.parallel``); the same seed makes the same
    per-attempt choices whatever their number."""
    reporter = reporter or Reporter()
    if not 0.0 <= refine_rate <= 1.0:
        raise BadInput("--refine-rate must be between 0 and 1")
    if client is None:
        raise BadInput("--agent llm needs a model (--model and --base-url)")
    if workers < 1:
        raise BadInput("--workers must be at least 1")
    limits = limits or AgentLimits(max_steps=40, max_seconds=900)
    model = client.config.model
    ctx = open_run(gold_dir, run_dir, runtime, reporter, attempts, seed=seed, operators=[],
                   sample_size=sample_size, max_operators=1, agent="llm", model=model, refine_rate=refine_rate)
    at_once = f", {workers} attempts at once" if workers > 1 else ""
    with ctx.runtime.session(ctx.gold.image) as session, reporter.task(
        f"inverting {ctx.gold.source.spec} with {model or 'the model'}{at_once}", total=attempts
    ):
        ctx.gold_session = session
        degrader = AgentDegrader(client, limits, refine_rate, model, lag=workers)
        return run_attempts(ctx, degrader, attempts, workers=workers)
