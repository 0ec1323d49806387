"""Error excerpts as a person running the tests would read them.

A task's recorded errors (``Task.errors``) are pytest's messages as the harness
collected them. Older records carry the harness's own wording (a report that was not
written, an id that was not collected), colour codes, pytest's advice under an ImportError
of a test module, and names of harness files that do not exist in a task. ``clean_error``
removes all of that and keeps the real error; ``error_lines`` and ``key_error`` pick what a
text quotes from it.
"""

from __future__ import annotations

import re

#: ANSI escape sequences, and colour codes whose escape character was lost on the way
#: ("[1m[31mE   ...[0m").
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]?")
BARE_SGR = re.compile(r"\[(?:\d{1,3};)*\d{1,3}m")
#: Whole lines that tell nothing about what broke.
NOISE_LINES = re.compile(
    r"^(collection failure"
    r"|Hint: make sure your test modules/packages have valid Python names\."
    r"|-* ?generated xml file: .*"
    r"|the test command produced no report(; its output ended with:)?)$",
    re.IGNORECASE,
)
#: The harness's options, as a usage error of pytest echoes them.
HARNESS_OPTIONS = re.compile(r"\s*(-p no:cacheprovider|--continue-on-collection-errors|--maxfail=0"
                             r"|-o junit_family=xunit1|--junitxml=\S*cligym\S*)")
#: Harness wording and harness file names (what ``check_issues`` refuses in a text).
HARNESS_WORDING = [
    r"not in the test report", r"not collected under this id", r"produced no report",
    r"its output ended with", r"^\s*collection failure\s*$", r"junit_family=", r"--junitxml",
    r"no:cacheprovider",
    r"\.?cligym[-_](report|tests|probe|solve|manifest|fingerprint|read-reference|reference|args|spec|out|list"
    r"|pristine|agent)",
]
DID_NOT_RUN = "this test did not run"
EXCEPTION = re.compile(r"^(?:E\s+)?((?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning))"
                       r"\b:?\s*(.*)$")
ERRORISH = re.compile(r"(Error|Exception)\b|\berror:|\bnot found\b|cannot open|did not run|timed out", re.IGNORECASE)


def strip_ansi(text: str) -> str:
    return BARE_SGR.sub("", ANSI.sub("", text))


def _harness_line(line: str) -> str:
    """One line with the harness's words replaced by what a person would see."""
    line = HARNESS_OPTIONS.sub("", line)
    line = re.sub(r"^cligym-tests:", "sh:", line)
    match = re.match(r"^not in the test report(?:: not collected under this id)?\s*(\(pytest: .*\))?$", line.strip())
    if match:
        return DID_NOT_RUN + (f" {match.group(1)}" if match.group(1) else "")
    match = re.match(r"^the test command produced no report \(timed out\)(; its output ended with:)?$", line.strip())
    if match:
        return "(the test command timed out)"
    return line


def clean_error(message: str) -> str:
    """``message`` without colour codes, harness wording or pytest's noise lines."""
    rows = []
    for raw in strip_ansi(message or "").splitlines():
        line = _harness_line(raw.rstrip())
        if line.strip() and not NOISE_LINES.match(line.strip()):
            rows.append(line)
    return "\n".join(rows).strip("\n")


def error_lines(message: str, limit: int) -> str:
    """Up to ``limit`` lines of a cleaned message that carry the error (``E`` lines and lines
    naming an error), the last ones; all its last lines when none does."""
    rows = [r for r in clean_error(message).splitlines() if r.strip()]
    if len(rows) > 1 and rows[0].strip() in {re.sub(r"^E\s+", "", r.strip()) for r in rows[1:]}:
        rows = rows[1:]  # pytest's one-line message, repeated by the report's E lines
    picked = [r for r in rows if re.match(r"^E\s", r) or ERRORISH.search(r)]
    return "\n".join((picked or rows)[-limit:])


def key_error(message: str) -> str:
    """The one line that says what failed: the last exception line (``Type: message``), else
    the last line naming an error, else the last line; "" for an empty message."""
    rows = [re.sub(r"^E\s+", "", r.strip()) for r in clean_error(message).splitlines() if r.strip()]
    for row in reversed(rows):
        if EXCEPTION.match(row):
            return row[:200]
    return next((r for r in reversed(rows) if ERRORISH.search(r)), rows[-1] if rows else "")[:200]


def exception_type(line: str) -> str:
    match = EXCEPTION.match(line)
    return match.group(1) if match else ""


def harness_wording(text: str) -> list[str]:
    """The harness phrases and file names found in ``text``."""
    found = (re.search(p, text, re.IGNORECASE | re.MULTILINE) for p in HARNESS_WORDING)
    return [m.group(0).strip() for m in found if m]


def has_ansi(text: str) -> bool:
    return bool(ANSI.search(text) or BARE_SGR.search(text))
