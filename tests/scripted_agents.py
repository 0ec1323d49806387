"""A scripted degrading model for the LLM inversion path, used by tests and the agent
bench: real degradations of markupsafe 3.0.2's gold environment, chosen per attempt from
what the request shows (never from the order requests arrive in), so attempts made several
at a time get the answers they would get one at a time."""

from __future__ import annotations

import hashlib
import json

from cligym.invert.agentic import DOCKERFILE_PATH, RECOVERY_PATH, RECOVERY_TURN
from cligym.invert.query import QUERY_SYSTEM
from tests.llm_server import reply, tool_call

SITE = "/opt/venv/lib/python3.11/site-packages"
PKG = f"{SITE}/markupsafe"
SO = f"{PKG}/_speedups.cpython-311-x86_64-linux-gnu.so"
WHEEL = "/opt/wheelhouse/markupsafe-3.0.2-cp311-cp311-linux_x86_64.whl"


def writes_recovery(*lines: str) -> str:
    """The command an agent runs to write its repair script."""
    body = "\n".join(["#!/bin/sh", "set -e", *lines])
    return f"mkdir -p {RECOVERY_PATH.rsplit('/', 1)[0]} && cat > {RECOVERY_PATH} <<'EOF'\n{body}\nEOF"


#: The repairs the scripted agent writes when asked: an admin's (from what the image
#: holds), one that needs the network, one that carries the original's bytes in.
HONEST_REINSTALL = writes_recovery("/opt/venv/bin/python -m pip install -q --no-index --find-links /opt/wheelhouse "
                                   "--force-reinstall --no-deps markupsafe==3.0.2")
FROM_THE_INDEX = writes_recovery(  # no configuration file: pip's default index, not the image's wheelhouse
    "PIP_CONFIG_FILE=/dev/null /opt/venv/bin/python -m pip install -q --no-cache-dir --force-reinstall --no-deps "
    "markupsafe==3.0.2")
CARRIES_THE_BYTES = (  # the original extension, read from the wheel, base64 in the script
    f"mkdir -p /cligym-out && /opt/venv/bin/python -c \"import base64, zipfile; "
    f"so = zipfile.ZipFile('{WHEEL}').read('markupsafe/{SO.rsplit('/', 1)[1]}'); "
    f"open('{RECOVERY_PATH}', 'w').write('#!/bin/sh\\nbase64 -d > {SO} <<E\\n' + "
    "base64.encodebytes(so).decode() + 'E\\n')\"")

# (title, category, which tests, commands run, Dockerfile written, the recovery command)
DEGRADATIONS = [
    ("Damaged speedups header", "dynamic linking", "_speedups",
     [f"printf 'JUNK' | dd of={SO} bs=1 count=4 conv=notrunc status=none"],
     f"RUN printf 'JUNK' | dd of={SO} bs=1 count=4 conv=notrunc status=none", CARRIES_THE_BYTES),
    ("Pure-Python fallback gone", "packaging", "all",
     [f"rm -f {PKG}/_native.py"], f"RUN rm -f {PKG}/_native.py", FROM_THE_INDEX),
    ("Interpreter lost its execute bit", "permissions", "all",
     ["chmod a-x /usr/bin/python3.11"], "RUN chmod a-x /usr/bin/python3.11",
     writes_recovery("chmod 0755 /usr/bin/python3.11")),
    ("Import hook hides the extension", "import system", "_speedups",
     [f"echo \"import sys; sys.modules['markupsafe._speedups'] = None\" > {SITE}/zz_compat.pth"],
     f"RUN echo \"import sys; sys.modules['markupsafe._speedups'] = None\" > {SITE}/zz_compat.pth",
     writes_recovery(f"rm -f {SITE}/zz_compat.pth")),
    ("Half-recorded cleanup", "packaging", "all",
     ["touch /etc/motd", f"rm -f {PKG}/_native.py"], "RUN touch /etc/motd", HONEST_REINSTALL),
    ("Careless edit with a kept copy", "source code", "all",
     [f"cp {PKG}/__init__.py /var/tmp/.init.keep", f"echo 'raise ImportError(\"half-upgraded\")' >> {PKG}/__init__.py"],
     f"RUN cp {PKG}/__init__.py /var/tmp/.init.keep && "
     f"echo 'raise ImportError(\"half-upgraded\")' >> {PKG}/__init__.py", HONEST_REINSTALL),
    # nothing in the image holds the module (no apt repository, no wheel of the standard
    # library): neither the agent's repair (it asks apt's network) nor a derived one is offline
    ("Standard library module emptied", "standard library", "all",
     ["truncate -s 0 /usr/lib/python3.11/textwrap.py"], "RUN truncate -s 0 /usr/lib/python3.11/textwrap.py",
     writes_recovery("apt-get install -y --reinstall libpython3.11-stdlib")),
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

    def pick(self, digest: str) -> int:
        """The degradation of the attempt whose query prompt has this ``attempt_key``."""
        return self.kinds[int(digest, 16) % len(self.kinds)]

    def __call__(self, messages):
        if messages[0]["content"] == QUERY_SYSTEM:
            if messages[-1]["content"].startswith("Here is a draft assignment"):
                return answer(messages, messages[-2]["content"], delay=self.delay)  # the refinement keeps the draft
            prompt = messages[-1]["content"]
            listed = [line for line in prompt.splitlines() if line.startswith("tests/")]
            digest = attempt_key(prompt)
            title, category, which, _, _, _ = DEGRADATIONS[self.pick(digest)]
            chosen = [t for t in listed if which == "all" or which in t][:12]
            return answer(messages, json.dumps({
                "title": f"{title} #{digest[:8]}", "category": category, "selected_tests": chosen,
                "description": f"{title}: make the change, then run the chosen tests to confirm they fail.",
                "expected_error": "ImportError", "recovery_strategy": "Put the affected files back as installed."}),
                delay=self.delay)
        assignment = messages[1]["content"]
        _, _, _, commands, dockerfile, recovery = next(d for d in DEGRADATIONS
                                                       if assignment.startswith(f"Assignment: {d[0]} #"))
        # the recovery turn (sent joined to the last tool message, as a user turn after a tool one is)
        asked = [i for i, m in enumerate(messages) if m["role"] in ("user", "tool")
                 and RECOVERY_TURN.split("{", 1)[0] in str(m.get("content"))]
        if asked:
            steps = [tool_call("execute_bash", {"command": recovery}), tool_call("finish", {"summary": "written"})]
            done = sum(1 for m in messages[asked[-1]:] if m["role"] == "assistant")
            return answer(messages, None, [steps[min(done, 1)]], delay=self.delay)
        step = sum(1 for m in messages if m["role"] == "assistant")
        plan = [tool_call("execute_bash", {"command": c}) for c in commands] + [
            tool_call("execute_bash", {"command": "python -m pytest -q -x tests 2>&1 | tail -2"}),
            tool_call("execute_bash", {"command": f"mkdir -p {DOCKERFILE_PATH.rsplit('/', 1)[0]} && "
                                                  f"cat > {DOCKERFILE_PATH} <<'EOF'\n{dockerfile}\nEOF"}),
            tool_call("finish", {"summary": "done"}),
        ]
        return answer(messages, None, [plan[min(step, len(plan) - 1)]], delay=self.delay)
