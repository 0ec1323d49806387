"""Query generation for the LLM-agent inversion (the paper's appendix A.1, in our words).

An attempt samples 1–3 intervention directions from ``AREAS`` and up to 200 gold tests. A
model turns them into a degradation task (``DegradationQuery``: title, category, the tests
it should break (≤ 50, taken from the sample), a description for the degrading agent, the
error it expects and how one would recover). The titles made so far (the memory pool) are
shown so it does not repeat itself; an optional second pass refines the draft against the
chosen tests.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from pydantic import ValidationError

from cligym.agents.answers import last_json_object, split_reasoning
from cligym.errors import CligymError
from cligym.models.gold import GoldEnv
from cligym.models.task import DegradationQuery

MAX_SELECTED = 50
MAX_MEMORY = 100
#: Intervention directions: the environment areas a degradation may go through.
AREAS: dict[str, str] = {
    "dynamic linking": "shared libraries, their symlinks and the loader's search configuration",
    "package versions": "which versions of the installed distributions are present and how they fit together",
    "package metadata": "dist-info records: METADATA, RECORD, entry points, top_level, installer data",
    "import system": "how Python finds modules: sys.path entries, .pth files, shadowing modules, site hooks",
    "bytecode": "compiled __pycache__ files and how Python decides to trust them",
    "file permissions": "modes and execute bits of programs, libraries and data files",
    "environment configuration": "files that set variables or defaults for the shell, Python or libraries",
    "locale and encoding": "locale definitions, character maps and the encodings programs fall back to",
    "time zone data": "zoneinfo files and the system's local time configuration",
    "certificates": "CA bundles and the certificate stores libraries read",
    "system files": "files under /etc and /usr/share that libraries read: mime types, services, passwd",
    "interpreter and venv": "the virtual environment's interpreter links, pyvenv.cfg and the standard library",
    "test configuration": "pytest configuration files, conftest.py files and installed pytest plugins",
    "source code": "small, plausible changes to the installed project code (never the test files)",
}

QUERY_SYSTEM = """\
You plan controlled fault-injection exercises. A disposable, offline Linux container holds a
Python project whose test suite passes. An engineer agent will break the container on
purpose so that chosen tests fail the way they would after a real misconfiguration, a
corrupted file or a botched upgrade; other agents then have to diagnose and repair it.
You write the engineer's assignment. Answer with one JSON object and nothing else."""

QUERY_TEMPLATE = """\
Project: {project} (Python {python}), checked out at {workdir}.
Tests run as: cd {workdir} && {test_command} <test ids>

Areas to work through (combine them if there are several):
{areas}

Tests of the suite (pick the ones the fault should break, at most {max_selected}):
{tests}

Assignments already written (do not repeat their idea; try a different mechanism):
{memory}

Requirements:
- The fault lives in the environment (the areas above); test files must stay untouched.
- It must be made by shell commands alone, without network, and be repeatable in a fresh
  copy of the container.
- No backups, copies of originals, notes or renamed files may stay behind; the change should
  look like an accident, not like sabotage.
- The harness runs as root with /bin/sh, bash, coreutils (timeout, base64, tar) and the C
  library; they must keep working.
- The chosen tests must fail because of the fault.

Answer with a JSON object with exactly these keys:
  "title": a short name for the assignment,
  "category": one or two words for the kind of fault,
  "selected_tests": a list of test ids copied from the list above,
  "description": what the engineer should do and why, as instructions, ending with asking
      them to run the chosen tests to confirm they fail,
  "expected_error": the error the tests should then show,
  "recovery_strategy": how someone would repair it."""

REFINE_TEMPLATE = """\
Here is a draft assignment:

{draft}

Improve it before it is handed over:
- state the goal in plain instructions (what to achieve and where), not as a bare command list;
- make sure the fault really reaches the code paths of these tests, and drop tests it would not break:
{tests}
- keep every requirement from before (environment only, no network, no leftovers, harness tools intact);
- end the description by asking to run the chosen tests to confirm they fail.
Answer with the improved JSON object (same keys) and nothing else."""


class QueryError(CligymError):
    """The model's answer could not be made into a degradation task."""


def sample_directions(rng: random.Random) -> list[str]:
    return rng.sample(sorted(AREAS), rng.randint(1, 3))


def query_prompt(gold: GoldEnv, directions: list[str], tests: list[str], memory: list[str]) -> str:
    recent = memory[-MAX_MEMORY:]
    return QUERY_TEMPLATE.format(
        project=gold.source.spec, python=gold.python_version, workdir=gold.workdir, test_command=gold.test_command,
        areas="\n".join(f"- {name}: {AREAS[name]}" for name in directions),
        tests="\n".join(tests), max_selected=MAX_SELECTED,
        memory="\n".join(f"- {title}" for title in recent) if recent else "(none yet)",
    )


def answer_json_object(text: str) -> dict[str, Any]:
    """The answer's JSON object: the last complete one in ``text`` that has a "title" (a
    model may draft one and then correct it; prose, code fences and ``<think>`` reasoning
    around it are skipped, braces in them too); else the last object at all."""
    answer = split_reasoning(text)[0]
    found = last_json_object(answer, "title")
    if found is not None:
        return found
    start = answer.find("{")
    if start < 0:
        raise QueryError("the answer holds no JSON object")
    try:
        json.loads(answer[start:])
    except json.JSONDecodeError as exc:
        raise QueryError(f"the JSON object does not parse ({exc.msg} at position {exc.pos + start})") from None
    raise QueryError("the answer holds no JSON object")


def parse_query(text: str, sample: list[str]) -> DegradationQuery:
    """The JSON object in ``text`` as a query whose tests are ids of ``sample`` (≤ 50, in
    suite order). A file path among the tests stands for the sample's tests in that file."""
    data = answer_json_object(text or "")
    wanted = data.get("selected_tests")
    if isinstance(wanted, str):
        wanted = [wanted]
    known = set(sample)
    chosen: set[str] = set()
    for item in wanted if isinstance(wanted, list) else []:
        item = str(item).strip().strip("`")
        if item in known:
            chosen.add(item)
        else:
            chosen.update(t for t in sample if t.startswith(item.rstrip("/") + "::"))
    data["selected_tests"] = [t for t in sample if t in chosen][:MAX_SELECTED]
    if not data["selected_tests"]:
        raise QueryError("selected_tests names none of the listed tests")
    for key in ("title", "category", "description", "expected_error", "recovery_strategy"):
        if key in data and not isinstance(data[key], str):
            data[key] = json.dumps(data[key]) if not isinstance(data[key], list) else "\n".join(map(str, data[key]))
    if isinstance(data.get("category"), str):
        data["category"] = re.sub(r"[^a-z0-9]+", "_", data["category"].lower()).strip("_")
    try:
        return DegradationQuery.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise QueryError(f"field {'.'.join(map(str, first['loc']))}: {first['msg']}") from exc


def generate_query(
    client, gold: GoldEnv, directions: list[str], sample: list[str], memory: list[str], *, refine: bool,
    tokens: list[int], deadline: float | None = None,
) -> tuple[DegradationQuery, bool]:
    """Ask ``client`` for a degradation task: (the task, whether a refinement pass made it).
    One malformed answer is sent back once for a correction. ``tokens`` ([prompt,
    completion]) is increased by every call, also when this raises (QueryError for an
    unusable answer; ModelError from the client). No call runs past ``deadline`` (a
    ``time.monotonic()`` value)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": QUERY_SYSTEM},
        {"role": "user", "content": query_prompt(gold, directions, sample, memory)},
    ]
    query = _ask(client, messages, sample, tokens, deadline)
    refined = False
    if refine:
        messages += [
            {"role": "assistant", "content": query.model_dump_json()},
            {"role": "user", "content": REFINE_TEMPLATE.format(
                draft=query.model_dump_json(indent=2), tests="\n".join(f"  {t}" for t in query.selected_tests))},
        ]
        try:
            query = _ask(client, messages, query.selected_tests, tokens, deadline)
            refined = True
        except QueryError:
            pass  # an unusable refinement leaves the draft as it was
    return query, refined


def _ask(client, messages: list[dict[str, Any]], sample: list[str], tokens: list[int], deadline: float | None,
         correction: bool = True) -> DegradationQuery:
    reply = client.chat(messages, deadline=deadline)
    tokens[0] += reply.usage.prompt_tokens
    tokens[1] += reply.usage.completion_tokens
    try:
        return parse_query(reply.content or "", sample)
    except QueryError as exc:
        if not correction:
            raise
        again = [*messages, {"role": "assistant", "content": reply.content or ""},
                 {"role": "user", "content": f"That answer could not be used: {exc}. "
                                             "Answer again with the JSON object only."}]
        return _ask(client, again, sample, tokens, deadline, correction=False)
