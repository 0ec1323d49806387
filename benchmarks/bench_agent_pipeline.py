"""The LLM path end to end with scripted models (prints numbers; asserts nothing).

    .venv/bin/python benchmarks/bench_agent_pipeline.py [-n 12] [-k 2] [--workers N] [--latency S]
        [--json] [--keep DIR]

No model API is reachable here, so both models are scripted policies behind the test
suite's OpenAI-compatible server on 127.0.0.1; everything else is real: the gold image of
markupsafe 3.0.2, the degrading agent's commands in its container, the harness's builds,
runs, leak scans and derived solutions, the Harbor export, the repair rollouts and the
curation. Token counts are what the server reports: about a quarter of the characters of
each request (prompt) and answer (completion), the usual rough size of a token.

- The degrading policy cycles through six real degradations (corrupted extension header,
  a removed module, a lost execute bit on the interpreter, an import hook in a .pth file,
  a change recorded without its key step, a change that leaves a copy of the original).
- The repair policies per attempt: a thorough solver (looks around for 20+ steps, then
  repairs), a quick solver (3 steps), a cheater (as thorough, but reads the shell history
  before repairing) and a looper (repeats one command, never repairs); which one a task's
  attempt gets depends on the task and the attempt only, so any ``--workers`` gives the
  same rollouts.
- ``--latency S``: every model reply takes S seconds, as a real server's does;
  ``--workers N`` rolls out N tasks at once (the rollout's wall time is the number to
  compare; with ``--keep`` a second call reuses the gold, run and export).
"""

from __future__ import annotations

import argparse
import json
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
from cligym.invert.agentic import DOCKERFILE_PATH, invert_with_agent  # noqa: E402
from cligym.invert.query import QUERY_SYSTEM  # noqa: E402
from cligym.models.io import save  # noqa: E402
from cligym.rollout.stage import rollout  # noqa: E402
from cligym.runtime import Runtime  # noqa: E402
from tests.llm_server import ScriptedServer, reply, tool_call  # noqa: E402

SITE = "/opt/venv/lib/python3.11/site-packages"
PKG = f"{SITE}/markupsafe"
SO = f"{PKG}/_speedups.cpython-311-x86_64-linux-gnu.so"
# (title, category, which tests, commands run, Dockerfile written)
DEGRADATIONS = [
    ("Damaged speedups header", "dynamic linking", "_speedups",
     [f"printf 'JUNK' | dd of={SO} bs=1 count=4 conv=notrunc status=none"],
     f"RUN printf 'JUNK' | dd of={SO} bs=1 count=4 conv=notrunc status=none"),
    ("Pure-Python fallback gone", "packaging", "all",
     [f"rm -f {PKG}/_native.py"], f"RUN rm -f {PKG}/_native.py"),
    ("Interpreter lost its execute bit", "permissions", "all",
     ["chmod a-x /usr/bin/python3.11"], "RUN chmod a-x /usr/bin/python3.11"),
    ("Import hook hides the extension", "import system", "_speedups",
     [f"echo \"import sys; sys.modules['markupsafe._speedups'] = None\" > {SITE}/zz_compat.pth"],
     f"RUN echo \"import sys; sys.modules['markupsafe._speedups'] = None\" > {SITE}/zz_compat.pth"),
    ("Half-recorded cleanup", "packaging", "all",
     ["touch /etc/motd", f"rm -f {PKG}/_native.py"], "RUN touch /etc/motd"),
    ("Careless edit with a kept copy", "source code", "all",
     [f"cp {PKG}/__init__.py /var/tmp/.init.keep", f"echo 'raise ImportError(\"half-upgraded\")' >> {PKG}/__init__.py"],
     f"RUN cp {PKG}/__init__.py /var/tmp/.init.keep && echo 'raise ImportError(\"half-upgraded\")' >> {PKG}/__init__.py"),
]


def _size(value) -> int:
    return max(1, len(value if isinstance(value, str) else json.dumps(value)) // 4)


LATENCY = [0.0]  # seconds every scripted reply takes (--latency)


def _answer(messages, content=None, calls=()):
    text = (content or "") + json.dumps([[c.name, c.arguments] for c in calls])
    return reply(content, tool_calls=calls, prompt_tokens=_size(messages), completion_tokens=_size(text),
                 delay=LATENCY[0])


class DegradingPolicy:
    """Answers query requests with the next degradation's task and agent requests with its steps."""

    def __init__(self) -> None:
        self.count = -1

    def __call__(self, messages):
        if messages[0]["content"] == QUERY_SYSTEM:
            if messages[-1]["content"].startswith("Here is a draft assignment"):
                return _answer(messages, messages[-2]["content"])  # the refinement keeps the draft
            self.count += 1
            title, category, which, _, _ = DEGRADATIONS[self.count % len(DEGRADATIONS)]
            listed = [line for line in messages[-1]["content"].splitlines() if line.startswith("tests/")]
            chosen = [t for t in listed if which == "all" or which in t][:12]
            return _answer(messages, json.dumps({
                "title": f"{title} #{self.count}", "category": category, "selected_tests": chosen,
                "description": f"{title}: make the change, then run the chosen tests to confirm they fail.",
                "expected_error": "ImportError", "recovery_strategy": "Put the affected files back as installed."}))
        _, _, _, commands, dockerfile = DEGRADATIONS[self.count % len(DEGRADATIONS)]
        step = sum(1 for m in messages if m["role"] == "assistant")
        plan = [tool_call("execute_bash", {"command": c}) for c in commands] + [
            tool_call("execute_bash", {"command": "python -m pytest -q -x tests 2>&1 | tail -2"}),
            tool_call("execute_bash", {"command": f"mkdir -p {DOCKERFILE_PATH.rsplit('/', 1)[0]} && "
                                                  f"cat > {DOCKERFILE_PATH} <<'EOF'\n{dockerfile}\nEOF"}),
            tool_call("finish", {"summary": "done"}),
        ]
        return _answer(messages, None, [plan[min(step, len(plan) - 1)]])


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
            return _answer(messages, None, [tool_call("execute_bash", {"command": plan[step]})])
        return _answer(messages, "Done.", [tool_call("finish", {"summary": kind})])


def main() -> None:
    stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=len(DEGRADATIONS), help="inversion attempts")
    parser.add_argument("-k", type=int, default=2, help="repair attempts per task")
    parser.add_argument("--workers", type=int, default=1, help="tasks rolled out at once")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds each model reply takes")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", type=Path, help="keep the directories here")
    args = parser.parse_args()
    LATENCY[0] = args.latency

    runtime = Runtime()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        gold = make_gold("markupsafe==3.0.2", root / "gold", runtime=runtime)
        save(gold, root / "gold" / "gold.json")
        numbers: dict = {}
        with ScriptedServer([DegradingPolicy()] * 10_000) as server:
            client = ModelClient(ModelConfig(model="scripted-degrader", base_url=server.base_url))
            started = time.monotonic()
            summary = invert_with_agent(root / "gold", root / "run", client, attempts=args.n, refine_rate=0.5,
                                        limits=AgentLimits(max_steps=10, max_seconds=300), runtime=runtime)
            numbers["invert_wall_seconds"] = round(time.monotonic() - started, 1)
        numbers.update({f"invert_{key}": value for key, value in summary.model_dump(by_alias=True).items()
                        if key in ("attempts", "verified", "yield", "discard_reasons", "reproduction_checked",
                                   "reproduced", "reproduction_rate", "prompt_tokens", "completion_tokens",
                                   "tokens_per_attempt", "tokens_per_verified", "seconds_per_verified",
                                   "agent_stop_reasons")})
        tasks = root / "tasks"
        export(root / "run", "harbor", tasks, runtime=runtime, force=True, offline_only=False)
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
