"""A scripted degrading model for the LLM inversion path, used by tests and the agent
bench: real degradations of markupsafe 3.0.2's gold environment, chosen per attempt from
what the request shows (never from the order requests arrive in), so attempts made several
at a time get the answers they would get one at a time."""

from __future__ import annotations

import hashlib
import json

from cligym.invert.agentic import DOCKERFILE_PATH
from cligym.invert.query import QUERY_SYSTEM
from tests.llm_server import reply, tool_call

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
     f"RUN cp {PKG}/__init__.py /var/tmp/.init.keep && "
     f"echo 'raise ImportError(\"half-upgraded\")' >> {PKG}/__init__.py"),
]


def size(value) -> int:
    """About a quarter of the characters: the usual rough size of a token."""
    return max(1, len(value if isinstance(value, str) else json.dumps(value)) // 4)


def answer(messages, content=None, calls=(), delay: float = 0.0):
    text = (content or "") + json.dumps([[c.name, c.arguments] for c in calls])
    return reply(content, tool_calls=calls, prompt_tokens=size(messages), completion_tokens=size(text), delay=delay)


def attempt_key(prompt: str) -> str:
    """What a query prompt shows of its attempt's own choices (the areas, the sampled tests),
    without the memory pool (which depends on how many attempts run at once)."""
    mine = prompt.split("Assignments already written")[0]
    return hashlib.sha256(mine.encode()).hexdigest()


class DegradingPolicy:
    """Answers a query request with a degradation picked by the attempt's own choices it
    shows (``attempt_key``; a refinement keeps the draft), and an agent request with that degradation's next step;
    ``kinds`` limits the choice to some DEGRADATIONS, ``delay`` is each reply's latency."""

    def __init__(self, kinds: list[int] | None = None, delay: float = 0.0) -> None:
        self.kinds = kinds if kinds is not None else list(range(len(DEGRADATIONS)))
        self.delay = delay

    def __call__(self, messages):
        if messages[0]["content"] == QUERY_SYSTEM:
            if messages[-1]["content"].startswith("Here is a draft assignment"):
                return answer(messages, messages[-2]["content"], delay=self.delay)  # the refinement keeps the draft
            prompt = messages[-1]["content"]
            listed = [line for line in prompt.splitlines() if line.startswith("tests/")]
            digest = attempt_key(prompt)
            title, category, which, _, _ = DEGRADATIONS[self.kinds[int(digest, 16) % len(self.kinds)]]
            chosen = [t for t in listed if which == "all" or which in t][:12]
            return answer(messages, json.dumps({
                "title": f"{title} #{digest[:8]}", "category": category, "selected_tests": chosen,
                "description": f"{title}: make the change, then run the chosen tests to confirm they fail.",
                "expected_error": "ImportError", "recovery_strategy": "Put the affected files back as installed."}),
                delay=self.delay)
        assignment = messages[1]["content"]
        _, _, _, commands, dockerfile = next(d for d in DEGRADATIONS if assignment.startswith(f"Assignment: {d[0]} #"))
        step = sum(1 for m in messages if m["role"] == "assistant")
        plan = [tool_call("execute_bash", {"command": c}) for c in commands] + [
            tool_call("execute_bash", {"command": "python -m pytest -q -x tests 2>&1 | tail -2"}),
            tool_call("execute_bash", {"command": f"mkdir -p {DOCKERFILE_PATH.rsplit('/', 1)[0]} && "
                                                  f"cat > {DOCKERFILE_PATH} <<'EOF'\n{dockerfile}\nEOF"}),
            tool_call("finish", {"summary": "done"}),
        ]
        return answer(messages, None, [plan[min(step, len(plan) - 1)]], delay=self.delay)
