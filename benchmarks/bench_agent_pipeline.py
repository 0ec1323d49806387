"""The LLM path end to end with scripted models (prints numbers; asserts nothing).

    .venv/bin/python benchmarks/bench_agent_pipeline.py [-n 12] [-k 2] [--workers N] [--latency S]
        [--json] [--keep DIR] [--invert-only]

No model API is reachable here, so both models are scripted policies behind the test
suite's OpenAI-compatible server on 127.0.0.1; everything else is real: the gold image of
markupsafe 3.0.2, the degrading agent's commands in its container, the harness's builds,
runs, leak scans and derived solutions, the Harbor export, the repair rollouts and the
curation. Token counts are what the server reports: about a quarter of the characters of
each request (prompt) and answer (completion), the usual rough size of a token.

- The degrading policy (``tests/scripted_agents.py``) picks one of seven real degradations
  per attempt from the tests the query request lists (corrupted extension header, a
  removed module, a lost execute bit on the interpreter, an import hook in a .pth file, a
  change recorded without its key step, a change that leaves a copy of the original, an
  emptied standard-library module), and when asked for its repair writes: an admin's (a
  chmod, a file removed, a reinstall from the image's wheelhouse), one that needs the
  package index, one that carries the original extension's bytes, or an apt reinstall
  with no apt repository. The default export (offline-fair only) is measured against
  the verified tasks (``export_default_share``), with who wrote each kept repair.
- The repair policies per attempt: a thorough solver (looks around for 20+ steps, then
  repairs), a quick solver (3 steps), a cheater (as thorough, but reads the shell history
  before repairing) and a looper (repeats one command, never repairs); which one a task's
  attempt gets depends on the task and the attempt only, so any ``--workers`` gives the
  same rollouts.
- ``--latency S``: every model reply takes S seconds, as a real server's does;
  ``--workers N`` makes N inversion attempts at once and rolls out N tasks at once (the
  wall times are the numbers to compare; with ``--keep`` a second call reuses the gold,
  and each ``--workers`` value has its own run, export and rollouts).
"""

from __future__ import annotations

import argparse
from collections import Counter
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from report import print_numbers, stop_on_sigterm  # noqa: E402  (benchmarks/report.py)

from cligym.agents.client import ModelClient, ModelConfig  # noqa: E402
from cligym.agents.loop import AgentLimits  # noqa: E402
from cligym.curate.stage import curate  # noqa: E402
from cligym.export.stage import export  # noqa: E402
from cligym.gold import make_gold  # noqa: E402
from cligym.invert.agentic import invert_with_agent  # noqa: E402
from cligym.layout import RunDir  # noqa: E402
from cligym.models.io import load, save  # noqa: E402
from cligym.models.task import Task  # noqa: E402
from cligym.rollout.stage import rollout  # noqa: E402
from cligym.runtime import Runtime  # noqa: E402
from tests.llm_server import ScriptedServer, tool_call  # noqa: E402
from tests.scripted_agents import DEGRADATIONS, DegradingPolicy, answer  # noqa: E402

LATENCY = [0.0]  # seconds every scripted reply takes (--latency)


class RepairPolicy:
    """Per attempt one of four behaviours, in turn; the fix is the task's own solve.sh."""

    LOOK = ["ls /testbed", "cd /testbed && python -m pytest -q -x 2>&1 | tail -5", "python3 --version",
            "ls -la /opt/venv/lib/python3.11/site-packages/markupsafe", "cat /opt/venv/pyvenv.cfg",
            "pip list 2>/dev/null | head", "ls /usr/lib/python3.11 | head", "env | sort | head -20",
            "ls -la /usr/bin/python3*", "python3 -c 'import sys; print(sys.path)'", "ls /etc | head",
            "find /opt/venv -newer /etc/hostname -type f 2>/dev/null | head", "cat /etc/os-release",
            "ls -la /opt/venv/bin", "python3 -c 'import markupsafe; print(markupsafe.__file__)'",
            "ls /opt/venv/lib/python3.11/site-packages | head -40", "df -h / | tail -1", "id", "uname -r"]

    KINDS = ("thorough", "quick", "cheater", "looper")

    def __init__(self, fixes: dict[str, str]) -> None:
        self.fixes = fixes
        self.order = sorted(fixes)  # a task's place decides its first attempt's behaviour
        self.started: dict[str, int] = {}  # task -> attempts begun (a task's attempts run one after another)
        self.kind: dict[str, str] = {}
        self.lock = threading.Lock()

    def __call__(self, messages):
        step = sum(1 for m in messages if m["role"] == "assistant")
        task = messages[1]["content"]
        with self.lock:
            if step == 0:
                attempt = self.started.get(task, 0)
                self.started[task] = attempt + 1
                self.kind[task] = self.KINDS[(self.order.index(task) + attempt) % len(self.KINDS)]
            kind = self.kind[task]
        fix = self.fixes[task]
        plan = {
            "thorough": self.LOOK + [fix, "cd /testbed && python -m pytest -q 2>&1 | tail -1"],
            "quick": ["cd /testbed && python -m pytest -q -x 2>&1 | tail -3", fix],
            "cheater": self.LOOK + ["cat /root/.bash_history", fix],
            "looper": ["ls /testbed"] * 6,
        }[kind]
        if step < len(plan):
            return answer(messages, None, [tool_call("execute_bash", {"command": plan[step]})], delay=LATENCY[0])
        return answer(messages, "Done.", [tool_call("finish", {"summary": kind})], delay=LATENCY[0])


def main() -> None:
    stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=len(DEGRADATIONS), help="inversion attempts")
    parser.add_argument("-k", type=int, default=2, help="repair attempts per task")
    parser.add_argument("--workers", type=int, default=1, help="inversion attempts and rollouts at once")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds each model reply takes")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--invert-only", action="store_true", help="stop after the inversion and the export")
    parser.add_argument("--keep", type=Path, help="keep the directories here")
    args = parser.parse_args()
    LATENCY[0] = args.latency

    runtime = Runtime()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        gold = make_gold("markupsafe==3.0.2", root / "gold", runtime=runtime)
        save(gold, root / "gold" / "gold.json")
        numbers: dict = {}
        with ScriptedServer([DegradingPolicy(delay=args.latency)] * 10_000) as server:
            client = ModelClient(ModelConfig(model="scripted-degrader", base_url=server.base_url))
            started = time.monotonic()
            run = root / f"run-w{args.workers}"
            summary = invert_with_agent(root / "gold", run, client, attempts=args.n, refine_rate=0.5,
                                        limits=AgentLimits(max_steps=10, max_seconds=300), runtime=runtime,
                                        workers=args.workers)
            numbers["invert_wall_seconds"] = round(time.monotonic() - started, 1)
        numbers.update({f"invert_{key}": value for key, value in summary.model_dump(by_alias=True).items()
                        if key in ("attempts", "verified", "yield", "discard_reasons", "reproduction_checked",
                                   "reproduced", "reproduction_rate", "prompt_tokens", "completion_tokens",
                                   "tokens_per_attempt", "tokens_per_verified", "seconds_per_verified",
                                   "agent_stop_reasons")})
        tasks = root / f"tasks-w{args.workers}"
        exported = export(run, "harbor", tasks, runtime=runtime, force=True)  # the default: offline-fair only
        made = [load(Task, record) for record in RunDir(run).task_records()]
        numbers.update(export_default_tasks=len(exported.tasks), export_verified=len(made),
                       export_default_share=round(len(exported.tasks) / len(made), 4) if made else None,
                       solution_origins=dict(Counter(t.solution_origin for t in made)),
                       carried_bytes_max=max((t.carried_bytes or 0 for t in made), default=None))
        if args.invert_only:
            print_numbers(numbers, args.json)
            return
        fixes = {(d / "instruction.md").read_text(): (d / "solution" / "solve.sh").read_text() for d in tasks.iterdir()}
        with ScriptedServer([RepairPolicy(fixes)] * 10_000) as server:
            client = ModelClient(ModelConfig(model="scripted-repairer", base_url=server.base_url))
            started = time.monotonic()
            rollouts = root / f"rollouts-w{args.workers}"
            rolled = rollout(tasks, rollouts, agent="llm", k=args.k, client=client, workers=args.workers,
                             limits=AgentLimits(max_steps=30, max_seconds=300), runtime=runtime)
            numbers["rollout_wall_seconds"] = round(time.monotonic() - started, 1)
            numbers.update(rollout_workers=args.workers, reply_latency=args.latency)
        numbers.update(rollout_tasks=rolled.tasks, rollout_attempts=rolled.attempts, rollout_successes=rolled.successes,
                       rollout_pass_at_1=rolled.pass_at_1, **{f"rollout_pass_at_{args.k}": rolled.pass_at_k},
                       rollout_tokens=rolled.prompt_tokens + rolled.completion_tokens)
        curated = curate(rollouts, root / f"sft-w{args.workers}")
        numbers.update({f"curate_{key}": value for key, value in curated.model_dump().items()
                        if key in ("trajectories", "successful", "failed", "kept", "dropped", "cheating_detected",
                                   "loops_failures", "loop_rate_failures", "loops_all")})
    print_numbers(numbers, args.json)


if __name__ == "__main__":
    main()
