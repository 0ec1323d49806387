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
5. ``check_broken_state`` as for operators: a repeat run, the leak scan, no test file
   touched, and a solution derived from the filesystem difference to gold that makes every
   selected test pass.
A model failure (unreachable, key refused, retries exhausted) stops the run with its one
line; the attempt it interrupted is redone when the run is resumed.
"""

from __future__ import annotations

import hashlib
import random
import re
import time
import uuid
from pathlib import Path

import docker.errors

from cligym import __version__
from cligym.agents.loop import AgentLimits, run_agent
from cligym.agents.tools import STATE_DIR, ToolExecutor
from cligym.errors import BadInput, BuildFailed, CligymError
from cligym.gold import GoldEnv
from cligym.invert.apply import build_broken
from cligym.invert.models import AgentRun, Candidate, DegradationQuery, Summary, TaskInstance
from cligym.invert.probe import Probe
from cligym.invert.query import QueryError, generate_query, sample_directions
from cligym.invert.search import SUMMARY_FILE, classify, open_run, summarize
from cligym.records import load, save
from cligym.rollout.atif import TrajectoryRecorder
from cligym.runtime import Runtime, Session
from cligym.testrun import run_tests, run_tests_in_session
from cligym.ui import Reporter
from cligym.verify.checks import check_broken_state
from cligym.verify.solution import derive_solution

DOCKERFILE_PATH = "/cligym-out/Dockerfile"
AGENT_NAME = "cligym-inverter"

INVERT_SYSTEM = """\
You are a reliability engineer running a fault-injection exercise. You work as root in a
disposable Linux container with no network; nothing in it matters outside this exercise.
Carry out the assignment you are given with the tools, check the result by running the
tests, then record what you changed as Dockerfile lines and call finish."""

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


def parse_dockerfile(text: str) -> tuple[list[str], list[str]]:
    """The agent's Dockerfile as (RUN instructions kept for ΔD, lines left out with why)."""
    text = re.sub(r"^\s*```[\w-]*\s*$", "", text, flags=re.MULTILINE)
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        if not pending and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if pending and raw.lstrip().startswith("#"):
            continue  # Docker drops comment lines inside a continued instruction too
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1]
            continue
        logical.append(pending + raw)
        pending = ""
    if pending.strip():
        logical.append(pending)
    kept, dropped = [], []
    for line in logical:
        instruction = line.strip().split(None, 1)[0].upper() if line.strip() else ""
        if instruction == "RUN" and len(line.strip()) > 3:
            kept.append("RUN " + line.strip()[3:].strip())
        elif instruction == "ENV":
            dropped.append(f"{line.strip()[:300]}  # ENV cannot be undone by a repair script")
        else:
            dropped.append(f"{line.strip()[:300]}  # only RUN instructions are kept")
    return kept, dropped


def test_files(gold: GoldEnv) -> set[str]:
    """Absolute paths of the files holding the gold tests."""
    root = gold.workdir.rstrip("/")
    return {f"{root}/{t.split('::', 1)[0]}" for t in gold.tests}


def invert_with_agent(
    gold_dir: Path,
    run_dir: Path,
    client,
    *,
    attempts: int,
    seed: int = 0,
    sample_size: int = 200,
    refine_rate: float = 0.5,
    limits: AgentLimits | None = None,
    runtime: Runtime | None = None,
    reporter: Reporter | None = None,
) -> Summary:
    reporter = reporter or Reporter()
    if attempts < 1:
        raise BadInput("-n must be at least 1")
    if not 0.0 <= refine_rate <= 1.0:
        raise BadInput("--refine-rate must be between 0 and 1")
    if client is None:
        raise BadInput("--agent llm needs a model (--model and --base-url)")
    limits = limits or AgentLimits(max_steps=40, max_seconds=900)
    model = getattr(getattr(client, "config", None), "model", None)
    gold, runtime, probe = open_run(gold_dir, run_dir, runtime, reporter, seed=seed, operators=[],
                                    sample_size=sample_size, max_operators=1, agent="llm", model=model,
                                    refine_rate=refine_rate)

    memory: list[str] = []
    with runtime.session(gold.image) as gold_session, reporter.task(
        f"inverting {gold.source.spec} with {model or 'the model'}", total=attempts
    ):
        for attempt in range(attempts):
            path = run_dir / "candidates" / f"{attempt:04d}.json"
            if path.exists():
                candidate = load(Candidate, path)
            else:
                candidate = _attempt(runtime, gold, probe, gold_session, client, limits, seed, attempt,
                                     sample_size, refine_rate, memory, run_dir, model)
                save(candidate, path)
            if candidate.query is not None:
                memory.append(candidate.query.title)
            reporter.advance()
    summary = summarize(run_dir, gold, attempts)
    save(summary, run_dir / SUMMARY_FILE)
    return summary


def _attempt(
    runtime: Runtime, gold: GoldEnv, probe: Probe, gold_session: Session, client, limits: AgentLimits,
    seed: int, attempt: int, sample_size: int, refine_rate: float, memory: list[str], run_dir: Path,
    model: str | None,
) -> Candidate:
    rng = random.Random(f"cligym-agent:{seed}:{attempt}")
    position = {t: i for i, t in enumerate(gold.tests)}
    sample = sorted(rng.sample(gold.tests, min(sample_size, len(gold.tests))), key=position.__getitem__)
    directions = sample_directions(rng)
    refine = rng.random() < refine_rate
    cid = f"{attempt:04d}"
    seconds: dict[str, float] = {}
    tokens = [0, 0]
    base: dict = dict(id=cid, attempt=attempt, seed=seed, origin="agent", seconds=seconds)

    def discarded(kind: str, reason: str) -> Candidate:
        return Candidate(**base, status="discarded", discard_kind=kind, reason=reason[:500],
                         prompt_tokens=tokens[0], completion_tokens=tokens[1])

    started = time.monotonic()
    try:
        made = generate_query(client, gold, directions, sample, memory, refine=refine, tokens=tokens)
    except QueryError as exc:
        seconds["query"] = time.monotonic() - started
        return discarded("bad_query", str(exc))
    seconds["query"] = time.monotonic() - started
    query: DegradationQuery = made.query
    selected = query.selected_tests
    base.update(query=query, refined=made.refined, sample=selected)

    started = time.monotonic()
    with runtime.session(gold.image) as session:
        recorder = TrajectoryRecorder(AGENT_NAME, __version__, model, str(uuid.uuid4()))
        executor = ToolExecutor(session, workdir=gold.workdir, command_timeout=limits.command_timeout,
                                max_output=limits.max_output)
        task = TASK_TEMPLATE.format(
            title=query.title, description=query.description, expected_error=query.expected_error or "(not given)",
            project=gold.source.spec, workdir=gold.workdir, test_command=gold.test_command,
            tests="\n".join(f"- {t}" for t in selected), dockerfile=DOCKERFILE_PATH,
        )
        outcome = run_agent(client, executor, system=INVERT_SYSTEM, task=task, limits=limits, recorder=recorder)
        tokens[0] += outcome.prompt_tokens
        tokens[1] += outcome.completion_tokens
        if outcome.stop_reason == "model_error":
            raise CligymError(outcome.error)
        trajectory = f"trajectories/{cid}.json"
        recorder.save(run_dir / trajectory, {"stop_reason": outcome.stop_reason})
        base["agent"] = AgentRun(stop_reason=outcome.stop_reason, steps=outcome.steps, seconds=outcome.seconds,
                                 summary=outcome.summary[:1000], trajectory=trajectory)
        seconds["agent"] = time.monotonic() - started
        written = session.get_file(DOCKERFILE_PATH)
        # what the harness put there is not part of the broken state
        session.exec(["rm", "-rf", STATE_DIR, DOCKERFILE_PATH.rsplit("/", 1)[0]], timeout=60)
        started = time.monotonic()
        first = run_tests_in_session(session, gold.workdir, gold.test_command, selected)
        seconds["run"] = time.monotonic() - started
    f2p, p2p = classify(first, selected)
    base.update(FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p, fail_fraction=round(len(f2p) / len(selected), 4))
    if not f2p:
        return discarded("no_failure", "every selected test passed after the agent's run")
    if written is None:
        return discarded("no_dockerfile", f"the agent wrote no {DOCKERFILE_PATH}")
    lines, dropped = parse_dockerfile(written.decode("utf-8", errors="replace"))
    base.update(dockerfile=lines, dropped_lines=dropped)
    if not lines:
        return discarded("no_dockerfile", f"{DOCKERFILE_PATH} holds no RUN instruction")

    digest = hashlib.sha256("\n".join([gold.image_id, *lines]).encode()).hexdigest()[:10]
    instance_id = f"{gold.source.name}.agent.{digest}"
    tag = f"cligym/broken-{gold.source.name.lower()}:{digest}"
    task_path = run_dir / "tasks" / instance_id / "instance.json"
    if task_path.exists() and load(TaskInstance, task_path).attempt != attempt:
        return discarded("duplicate", "the same delta as an earlier attempt")
    try:
        started = time.monotonic()
        try:
            build_broken(runtime, gold, lines, tag)
        except BuildFailed as exc:
            base["reproduced"] = False
            return discarded("build_failed", str(exc))
        seconds["build"] = time.monotonic() - started
        started = time.monotonic()
        fresh = run_tests(runtime, tag, gold.workdir, gold.test_command, selected)
        seconds["rerun"] = time.monotonic() - started
        fresh_f2p, _ = classify(fresh, selected)
        base["reproduced"] = set(fresh_f2p) == set(f2p)
        if not base["reproduced"]:
            extra, gone = sorted(set(fresh_f2p) - set(f2p)), sorted(set(f2p) - set(fresh_f2p))
            return discarded("not_reproducible", f"gold + ΔD fails {len(extra)} more {extra[:3]} and "
                                                 f"{len(gone)} fewer {gone[:3]} tests than the agent's container")

        def solution(report) -> str:
            return derive_solution(gold_session, probe.files, report)

        verdict = check_broken_state(runtime, gold, probe.files, tag, f2p, p2p, solution, order=selected,
                                     untouchable=test_files(gold))
        seconds.update(verdict.seconds)
        base["solution"] = verdict.solution
        base["extra_bytes"] = max(0, runtime.image_size(tag) - gold.image_bytes) if gold.image_bytes else None
        if not verdict.ok:
            return discarded(verdict.kind or "error", verdict.reason)
        root = gold.workdir.rstrip("/") + "/"
        category = re.sub(r"[^a-z0-9]+", "_", query.category.lower()).strip("_") or "agent"
        touches_code = any(p.startswith(root) and "__pycache__" not in p for p in verdict.changed_paths)
        task_record = TaskInstance(
            instance_id=instance_id, repo=gold.source.spec, image_name=gold.image, gold_image_id=gold.image_id,
            workdir=gold.workdir, test_command=gold.test_command, dockerfile=lines, operators=["llm_agent"],
            category=category, categories=sorted({category, *(["code"] if touches_code else [])}),
            targets=verdict.changed_paths[:20], FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p, selected_tests=selected,
            solution=verdict.solution,
            errors={t: (first.results[t].message if t in first.results else "")[:1500] for t in f2p},
            changed_paths=verdict.changed_paths, hints=[query.recovery_strategy],  # the expected error is only a guess
            fail_fraction=base["fail_fraction"], suite_size=len(gold.tests), extra_bytes=base["extra_bytes"],
            seed=seed, attempt=attempt, origin="agent", title=query.title,
        )
        save(task_record, task_path)
        return Candidate(**base, status="verified", instance_id=instance_id,
                         prompt_tokens=tokens[0], completion_tokens=tokens[1])
    except (CligymError, docker.errors.DockerException) as exc:
        return discarded("error", str(exc))
    finally:
        runtime.remove_image(tag)
