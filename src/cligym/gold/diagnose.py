"""Reading a gold suite run: what its collection errors ask for, what its output says in
its decisive lines, and why the tests that are left out did not pass.

``repairs`` turns a run's errors into requirements for one automatic repair round: a
missing module → its distribution; an option or marker pytest does not know → the plugin
that adds it; a pytest deprecation turned into an error by the project's
``filterwarnings = error`` → a pytest before the release that removes that behaviour.
"""

from __future__ import annotations

import re
from datetime import datetime

from packaging.utils import canonicalize_name
from packaging.version import Version

from cligym.gold.imports import distribution_for
from cligym.gold.requirements import requirement_name
from cligym.harness.testrun import ANSI
from cligym.models.testrun import TestRun

MISSING = re.compile(r"No module named '([\w.]+)'")
OPTION = re.compile(r"unrecognized arguments?: (.+)")
MARKER = re.compile(r"'([\w-]+)' not found in `markers` configuration option")
FIXTURE = re.compile(r"fixture '(\w+)' not found")
REMOVED_IN = re.compile(r"Pytest(?:RemovedIn(\d+)|Deprecation)Warning")
#: A dependency newer than the suite: a name gone from one of its modules.
TOO_NEW = re.compile(r"cannot import name '\w+' from '([\w.]+)'|module '([\w.]+)' has no attribute '\w+'")
ASYNC = re.compile(r"async def functions are not natively supported")
#: Options, markers and fixtures pytest plugins add, and the plugin that adds each.
OPTIONS = {
    "--cov": "pytest-cov", "--no-cov": "pytest-cov", "--timeout": "pytest-timeout", "-n": "pytest-xdist",
    "--numprocesses": "pytest-xdist", "--dist": "pytest-xdist", "--benchmark": "pytest-benchmark",
    "--reruns": "pytest-rerunfailures", "--doctest-plus": "pytest-doctestplus", "--mypy": "pytest-mypy",
    "--html": "pytest-html", "--randomly": "pytest-randomly", "--snapshot": "syrupy", "--mpl": "pytest-mpl",
    "--remote-data": "pytest-remotedata", "--asyncio-mode": "pytest-asyncio", "--forked": "pytest-forked",
    "--hypothesis": "hypothesis", "--flake8": "pytest-flake8", "--black": "pytest-black", "--env": "pytest-env",
}
MARKERS = {"asyncio": "pytest-asyncio", "benchmark": "pytest-benchmark", "timeout": "pytest-timeout",
           "flaky": "flaky", "vcr": "pytest-recording", "freeze_time": "pytest-freezer", "anyio": "anyio",
           "django_db": "pytest-django", "mpl_image_compare": "pytest-mpl", "trio": "pytest-trio"}
FIXTURES = {"mocker": "pytest-mock", "benchmark": "pytest-benchmark", "event_loop": "pytest-asyncio",
            "httpserver": "pytest-httpserver", "freezer": "pytest-freezer", "snapshot": "syrupy",
            "requests_mock": "requests-mock", "anyio_backend": "anyio", "aiohttp_client": "pytest-aiohttp",
            "httpx_mock": "pytest-httpx", "fs": "pyfakefs", "subtests": "pytest-subtests",
            "datadir": "pytest-datadir", "shared_datadir": "pytest-datadir", "caplog_json": "pytest-structlog"}


def clean(text: str) -> str:
    return ANSI.sub("", text)


def run_text(run: TestRun) -> str:
    """What a run said of its errors: its output's tail and the messages of the tests that
    failed or errored (a skip is the project's choice), colour-free."""
    said = [r.message for r in run.results.values() if r.message and r.outcome in ("failed", "error")]
    output = [ln for ln in clean(run.output_tail).splitlines() if not ln.startswith(("SKIPPED", "XFAIL"))]
    return "\n".join([*output, *map(clean, said)])


def repairs(run: TestRun, project: str, local: set[str], installed: list[str]) -> dict[str, str]:
    """Requirements that would fix what ``run`` shows, each with the reason: modules of the
    project itself or of its test helpers (``local``) are not installable, and nothing
    already among ``installed`` is asked for again (a pytest pin replaces pytest)."""
    text = run_text(run)
    have = {requirement_name(r) for r in installed}
    found: dict[str, str] = {}

    def want(requirement: str, reason: str) -> None:
        name = requirement_name(requirement)
        if name not in have or name == "pytest" and requirement not in installed:
            found.setdefault(requirement, reason)

    def installable(module: str) -> str | None:
        """The distribution of ``module`` unless it is the stdlib's, the project's or local."""
        dist = distribution_for(module)
        foreign = module.split(".")[0].lower() not in local
        return dist if dist and foreign and canonicalize_name(dist) != canonicalize_name(project) else None

    for module in dict.fromkeys(MISSING.findall(text)):
        if dist := installable(module):
            want(dist, f"No module named '{module}'")
    for line in OPTION.findall(text):
        for option in line.split():
            plugin = _plugin_for(option)
            if plugin:
                want(plugin, f"pytest did not know the option {option.split('=')[0]}")
    for table, pattern, what in ((MARKERS, MARKER, "marker"), (FIXTURES, FIXTURE, "fixture")):
        for name in dict.fromkeys(pattern.findall(text)):
            if name in table:
                want(table[name], f"pytest did not know the {what} '{name}'")
    if ASYNC.search(text):
        want("pytest-asyncio", "async test functions need a plugin")
    for module in dict.fromkeys(a or b for a, b in TOO_NEW.findall(text)):
        if dist := installable(module):
            found.setdefault(f"{dist}<999", f"{module} lacks a name the tests use (a newer release than theirs)")
    raised = "\n".join([*(r.message for r in run.results.values()),
                         *(ln for ln in clean(run.output_tail).splitlines() if ln.startswith("E ") or "rror" in ln)])
    removed = sorted({int(n or 999) for n in REMOVED_IN.findall(raised)})
    if removed:
        want(f"pytest<{removed[0]}", "a pytest deprecation raised as an error (the project's filterwarnings)")
    return found


#: The oldest pytest that runs on the images' Python (3.11).
PYTEST_FLOOR = Version("7.0")


def of_era(name: str, released: datetime | None, times: dict[Version, datetime], below: int) -> str | None:
    """The newest release of ``name`` (before major ``below``) that was out when the
    project's version was released: what its own suite ran with (pytest: not older than
    ``PYTEST_FLOOR``). None when the dates are unknown."""
    if released is None:
        return None
    floor = PYTEST_FLOOR if canonicalize_name(name) == "pytest" else Version("0")
    fit = [v for v, when in times.items()
           if when <= released and not v.is_prerelease and floor <= v and v.major < below]
    return f"{name}=={max(fit)}" if fit else None


def _plugin_for(option: str) -> str | None:
    name = option.split("=")[0]
    for prefix, plugin in OPTIONS.items():
        if name == prefix or (prefix.startswith("--") and name.startswith(prefix + "-")):
            return plugin
    return None


DECISIVE = re.compile(
    r"^(E\s+\S.*|.*\b(\w+Error|\w+Exception|error|ERROR)\b.*|.*No module named.*|.*not found.*|.*Interrupted:.*)$"
)


def decisive_lines(output: str, limit: int = 4) -> str:
    """The lines of pytest's output that say what went wrong (errors, ``E`` lines, usage
    errors), colour-free and without repeats, joined with " | "; the last lines when none."""
    lines = [ln.strip() for ln in clean(output).splitlines() if ln.strip()]
    picked = list(dict.fromkeys(ln for ln in lines if DECISIVE.match(ln) and not set(ln) <= set("=_- ")))
    chosen = picked[:limit] if picked else lines[-2:]
    return " | ".join(line[:240] for line in chosen)


def why_left_out(message: str) -> str:
    """A short reason a test did not pass: a missing optional dependency, a missing file,
    or the first decisive line of its message."""
    text = clean(message)
    missing = re.search(r"(?:could not import|No module named) '([\w.]+)'", text)
    if missing:
        return f"missing optional dependency {missing.group(1)}"
    file = re.search(r"No such file or directory: '([^']+)'", text)
    if file:
        return f"missing file {file.group(1)}"
    return decisive_lines(text, limit=1)[:160] or "no reason given"


COLLECTING = re.compile(r"^_+ ERROR collecting (\S+) _+$")


def collection_errors(output: str) -> dict[str, str]:
    """Test modules that failed to import (so none of their tests has an id), each with
    the reason ``why_left_out`` gives for its section of pytest's output."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in clean(output).splitlines():
        header = COLLECTING.match(line.strip())
        if header:
            current = header.group(1)
            sections[current] = []
        elif line.startswith(("=", "_")):
            current = None  # the next section, or the summary
        elif current:
            sections[current].append(line)
    return {path: why_left_out("\n".join([ln for ln in lines if ln.startswith("E ")] or lines))
            for path, lines in sections.items()}
