"""Running a pytest suite (or a chosen subset of node ids) in one container.

Per-test outcomes come from the JUnit XML report pytest writes inside the container,
never from its terminal output. The node ids are handed to the shell as positional
arguments, so hundreds of them (with spaces or brackets in parameter ids) fit in one run.
"""

from __future__ import annotations

import re
import shlex
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence

from cligym.config import DebianImage
from cligym.models.testrun import Outcome, TestResult, TestRun
from cligym.runtime import Runtime, Session

REPORT_PATH = "/tmp/cligym-report.xml"
#: Options appended to every test command: no cache dir written into the project, a JUnit
#: report whose testcases carry their file (xunit1), from which node ids are rebuilt, and
#: the other modules' tests still run when one test module fails to import (by default
#: pytest stops the whole session at a collection error, so a breakage of what one module
#: imports would fail every test).
COLLECTION_OPTION = "--continue-on-collection-errors"
#: Every test runs whatever failed before it: a project's own ``--maxfail``/``-x`` (in its
#: addopts, which pytest reads before the command line) would stop a run that fails many
#: tests early and leave the rest unrun (0: no limit; the later option wins).
NO_STOP_OPTION = "--maxfail=0"
REPORT_OPTIONS = (f"-p no:cacheprovider {COLLECTION_OPTION} {NO_STOP_OPTION} -o junit_family=xunit1 "
                  f"--junitxml={REPORT_PATH}")
#: How much of a test's message the task records keep (``invert.context.error_excerpts``):
#: messages are built so that the real error lies within it.
MESSAGE_BUDGET = 1500
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")
#: pytest's advice under an ImportError of a test module, and the line naming the report
#: file: neither tells what broke, and the report's path does not exist in a task.
NOISE_LINE = re.compile(
    r"^Hint: make sure your test modules/packages have valid Python names\.$|generated xml file:|^collection failure$"
)

#: The message of a requested test the report lacks (see ``_explain_missing``).
DID_NOT_RUN = "this test did not run"


def report_options(test_command: str) -> str:
    """The options appended to ``test_command``: pytest's, or the Debian runner's one (a
    test command naming ``DebianImage.DEBTEST`` takes only the report option)."""
    return f"--junitxml={REPORT_PATH}" if test_command.split()[:1] == [DebianImage.DEBTEST] else REPORT_OPTIONS


def shell_command(workdir: str, test_command: str, *, fresh_report: bool = False) -> list[str]:
    """The argv that runs ``test_command`` in ``workdir`` with test ids as ``"$@"``; with
    ``fresh_report``, after removing the report an earlier run left (a container used again:
    a run that writes none must not be read as that one's)."""
    remove = f"rm -f {REPORT_PATH} 2>/dev/null; " if fresh_report else ""
    script = f"{remove}cd {shlex.quote(workdir)} && {test_command} {report_options(test_command)} \"$@\""
    return ["sh", "-c", script, "sh"]  # $0: the shell's own messages read "sh: 1: ..."


def module_prefix(path: str) -> str:
    return path[:-3].replace("/", ".") if path.endswith(".py") else path.replace("/", ".")


def expected_key(node_id: str) -> tuple[str, str]:
    """The (classname, name) pytest's JUnit writer gives a node id."""
    parts = node_id.split("::")
    parts[0] = module_prefix(parts[0])
    return ".".join(parts[:-1]), parts[-1]


def node_id_of(case: ET.Element) -> str:
    """Rebuild a node id from an xunit1 testcase (file, classname, name).

    ``classname`` is the node id's own path, dotted, then its classes; ``file`` is where
    the test function is defined. The two differ for a test a class inherits from a
    class of another module: the node id then belongs to the module of ``classname``.
    """
    classname = case.get("classname", "")
    name = case.get("name", "")
    file = case.get("file")
    if not file:
        return "::".join([*classname.split("."), name])
    prefix = module_prefix(file)
    if classname == prefix or classname.startswith(prefix + "."):
        rest = classname[len(prefix) :].split(".")
    else:
        file, rest = _module_of(classname, file)
    return "::".join([file, *(p for p in rest if p), name])


def _module_of(classname: str, defined_in: str) -> tuple[str, list[str]]:
    """(file, classes) of a dotted classname whose module is not the defining file's:
    a sibling module of that file when the folder matches, else the parts before the first
    capitalised one (pytest collects classes named ``Test*``)."""
    parts = classname.split(".")
    folder = defined_in.rsplit("/", 1)[0] if "/" in defined_in else ""
    dotted = module_prefix(folder)
    if folder and classname.startswith(dotted + ".") and len(parts) > dotted.count(".") + 2:
        depth = dotted.count(".") + 1
        return f"{folder}/{parts[depth]}.py", parts[depth + 1 :]
    if not folder and len(parts) > 1:
        return f"{parts[0]}.py", parts[1:]
    cut = next((i for i, p in enumerate(parts) if i and p[:1].isupper()), len(parts))
    return "/".join(parts[:cut]) + ".py", parts[cut:]


#: The suite name of a report from the Debian runner (``debtest.sh``): its ids are
#: ``classname::name``, or ``classname`` alone where ``name`` repeats it (docs/debian.md).
DEBTEST_SUITE = "autopkgtest"


def is_debtest_report(root: ET.Element) -> bool:
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    return bool(suites) and all(s.get("name") == DEBTEST_SUITE for s in suites)


def debtest_id(classname: str, name: str) -> str:
    """A debtest testcase's id: the autopkgtest test alone for its one-result form."""
    return classname if name == classname else f"{classname}::{name}"


def _outcome(case: ET.Element) -> tuple[Outcome, str, ET.Element | None]:
    """A testcase's outcome, message and the child that gave them (the one rule: failure
    and error fail, even after a skip, as pytest writes a skipped test whose teardown
    failed; skipped skips; anything else passed)."""
    skipped = None
    for child in case:
        if child.tag in ("failure", "error"):
            return ("failed" if child.tag == "failure" else "error"), \
                (child.get("message") or "") + "\n" + (child.text or ""), child
        if child.tag == "skipped" and skipped is None:
            skipped = child
    if skipped is not None:
        return "skipped", skipped.get("message") or "", skipped
    return "passed", "", None


def parse_junit(xml: bytes, requested: Sequence[str] = ()) -> dict[str, TestResult]:
    """Per-test outcomes from a JUnit XML report: pytest's (node ids) or the Debian
    runner's (``debtest_id``).

    Requested ids that the report lacks are ``missing``. In pytest's, a collection error
    (a testcase for a whole module) marks every requested id of that file as ``error``.
    """
    root = ET.fromstring(xml)
    debtest = is_debtest_report(root)
    by_key = {} if debtest else {expected_key(n): n for n in requested}
    results: dict[str, TestResult] = {}
    file_errors: dict[str, str] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        node = debtest_id(*key) if debtest else by_key.get(key) or node_id_of(case)
        outcome, message, child = _outcome(case)
        if not debtest and not case.get("classname") and outcome == "error" and child is not None:
            # collection error of a whole module: name is the module's dotted path
            file_errors[case.get("name", "")] = collection_message(child.text or message)
            continue
        results[node] = TestResult(
            outcome=outcome, seconds=float(case.get("time") or 0.0), message=ANSI.sub("", message).strip()[:4000]
        )
    for node in requested:
        if node in results:
            continue
        path = node.split("::")[0]
        for mod, msg in file_errors.items():
            if module_prefix(path) == mod or path == mod or mod.endswith(module_prefix(path)):
                results[node] = TestResult(outcome="error", message=msg)
                break
        else:
            results[node] = TestResult(outcome="missing", message=_whole_test_failure(results, node) if debtest
                                       else DID_NOT_RUN)
    return results


def _whole_test_failure(results: dict[str, TestResult], node: str) -> str:
    """Why an inner result of the Debian runner is missing: its autopkgtest test failed as a
    whole (its one-result testcase, or the ``exit`` one after its inner results), with what
    that testcase says (the test's stderr), else only that it did not run."""
    test = node.split("::", 1)[0]
    whole = next((results[k] for k in (test, f"{test}::exit")
                  if k in results and results[k].outcome in ("failed", "error")), None)
    if whole is None:
        return DID_NOT_RUN
    return f"{DID_NOT_RUN}: its autopkgtest test {test} failed as a whole\n{whole.message}"[:4000]


def _rows(text: str) -> list[str]:
    """The lines of pytest's or the shell's output, without colour codes, the harness's own
    options (a usage error echoes them) and the noise lines."""
    text = ANSI.sub("", text).replace(REPORT_OPTIONS, "").replace(f"--junitxml={REPORT_PATH}", "")
    return [r.rstrip() for r in text.splitlines() if r.strip() and not NOISE_LINE.search(r.strip())]


def _fit(rows: list[str], keep: set[int], budget: int = MESSAGE_BUDGET) -> str:
    """``rows`` joined, dropping rows not in ``keep`` from the front until they fit."""
    rows = list(rows)
    while len("\n".join(rows)) > budget and any(i not in keep for i in range(len(rows))):
        drop = next(i for i in range(len(rows)) if i not in keep)
        rows.pop(drop)
        keep = {k - 1 if k > drop else k for k in keep}
    return "\n".join(rows)[-budget:]


def collection_message(text: str) -> str:
    """The error of a test module that failed to import, as pytest reported it: its first
    line and its ``E`` lines (the ImportError and its message) always, as much of the
    traceback between them as fits the budget."""
    rows = _rows(text)
    keep = {0} | {i for i, r in enumerate(rows) if re.match(r"E\s", r)}
    return _fit(rows, keep) if rows else "the test module could not be collected"


#: A run of a broken state may take this many times gold's slowest full run (plus the
#: floor, for container start and imports) before it counts as hung: a hanging test makes
#: no task (its verifier would only time out), and waiting the general limit for it cost
#: h11 15 minutes per hung state (its whole suite takes 0.3 s).
HANG_FACTOR = 5
HANG_FLOOR = 60.0
HANG_CAP = 900.0


def hang_timeout(full_run_seconds: Sequence[float]) -> float:
    """Seconds a run of some or all of gold's tests in a broken state is given."""
    return min(HANG_CAP, HANG_FLOOR + HANG_FACTOR * max(full_run_seconds, default=HANG_CAP))


def run_tests(
    runtime: Runtime,
    image: str,
    workdir: str,
    test_command: str,
    node_ids: Iterable[str] = (),
    *,
    paths: Sequence[str] = (),
    timeout: float = 900,
) -> TestRun:
    """Run the test command in a fresh container: the given node ids (each gets an
    outcome, ``missing`` if the report lacks it), or a whole collection of ``paths``."""
    ids = list(node_ids)

    def once(chosen: list[str]) -> TestRun:
        result = runtime.run(
            image, shell_command(workdir, test_command) + [*paths, *chosen], timeout=timeout, fetch=[REPORT_PATH]
        )
        return _collect(result, result.files.get(REPORT_PATH), chosen)

    return _without_unknown_ids(once, workdir, ids)


def run_tests_in_session(
    session: Session, workdir: str, test_command: str, node_ids: Iterable[str], *, timeout: float = 900
) -> TestRun:
    """Run node ids inside an already running container (e.g. after a repair script)."""
    def once(chosen: list[str]) -> TestRun:
        result, report = session.exec_then_read(shell_command(workdir, test_command, fresh_report=True) + chosen,
                                                REPORT_PATH, timeout=timeout)
        return _collect(result, report, chosen)

    return _without_unknown_ids(once, workdir, list(node_ids))


#: pytest's usage errors for ids it was given: no such test (``not found``), or its module
#: failed to import (``found no collectors``). Either stops the whole run.
NOT_FOUND = re.compile(r"^ERROR: (not found|found no collectors for):? (\S.*?)\s*$", re.M)


def _without_unknown_ids(once, workdir: str, ids: list[str]) -> TestRun:
    """Run ``ids``; when pytest stopped the run because some ids name no test (a
    parametrisation that depends on the environment lost a case, a test function is gone)
    or lie in a module that failed to import, run the others again (pytest may name only
    some of them each time, so up to four times) and record the refused ones as
    ``missing`` or ``error`` with pytest's words: one vanished test must not fail every
    other one."""
    prefix = workdir.rstrip("/") + "/"
    refused: dict[str, tuple[str, str]] = {}  # id -> (kind, the output that said so)
    run = first = once(ids)
    for _ in range(4):
        output = ANSI.sub("", run.output_tail)
        new = _refused_ids(run.refusals, output, prefix, [t for t in ids if t not in refused])
        rest = [t for t in ids if t not in refused and t not in new]
        if not new or not rest:
            break
        refused.update(new)
        run = once(rest)
    if not refused or not run.report_found:
        return first
    for test, (kind, output) in refused.items():
        run.results[test] = (
            TestResult(outcome="missing", message=f"ERROR: not found: {prefix}{test}\n{DID_NOT_RUN}")
            if kind == "not found" else TestResult(outcome="error", message=_module_error(output, test))
        )
    run.results = {t: run.results[t] for t in ids if t in run.results}
    return run


NO_COLLECTORS = "found no collectors for"


def _refused_ids(refusals: dict[str, str], output: str, prefix: str, ids: list[str]) -> dict[str, tuple[str, str]]:
    """The ``ids`` pytest refused (``TestRun.refusals``), each with (kind, ``output``).
    pytest names a parametrised test without its parameters, and once a module failed to
    import it may name only some of the ids in it: every id of such a module is refused
    with them."""
    said = {node.removeprefix(prefix): kind for node, kind in refusals.items()}
    broken = {node.split("::")[0] for node, kind in said.items() if kind == NO_COLLECTORS}
    refused = {}
    for test in ids:
        kind = said.get(test) or said.get(_unparametrised(test))
        if kind or test.split("::")[0] in broken:
            refused[test] = (kind or NO_COLLECTORS, output)
    return refused


def _unparametrised(test: str) -> str:
    """``tests/a.py::T::test_x[1-2]`` -> ``tests/a.py::T::test_x``."""
    head, sep, last = test.rpartition("::")
    return head + sep + last.split("[", 1)[0] if sep else test


def _module_error(output: str, test: str) -> str:
    """The collection error pytest printed for the module of ``test``."""
    found = re.search(rf"_+ ERROR collecting {re.escape(test.split('::')[0])} _+\n", output)
    section = output[found.end():] if found else output
    ends = re.search(r"^(=+|_+ ERROR collecting )", section, re.M)
    return collection_message(section[: ends.start()] if ends else section)


def _explain_missing(results: dict[str, TestResult], output: str) -> None:
    """A test missing from the report did not run (a parameter or the module changed, or
    pytest refused another id it was given): pytest's own ``ERROR:`` lines say why, and its
    closing summary line what ran instead."""
    rows = [r.strip() for r in _rows(output)]
    summary = next((r.strip(" =") for r in reversed(rows)
                    if re.search(r"\b(passed|failed|skipped|errors?|no tests ran)\b", r)), "")
    said = [r for i, r in enumerate(rows)
            if r.startswith("ERROR:") or (r.startswith("(") and i and rows[i - 1].startswith("ERROR:"))]
    lines = [*said[:6], *(["…"] if len(said) > 6 else []), f"{DID_NOT_RUN} (pytest: {summary})" if summary else ""]
    message = "\n".join(line for line in lines if line)
    if not message:
        return
    for node, outcome in results.items():
        if outcome.outcome == "missing":
            results[node] = TestResult(outcome="missing", message=message[-MESSAGE_BUDGET:])


def no_report_message(output: str, timed_out: bool, exit_code: int | None) -> str:
    """What a test command that wrote no report said: the end of its output (its last
    lines carry the error), or that it said nothing."""
    rows = _rows(output)[-25:]
    if timed_out:
        rows.append("(the test command timed out)")
    if not rows:
        return f"the test command printed nothing (exit status {exit_code})"
    return _fit(rows, {len(rows) - 1, len(rows) - 2})


def _collect(result, report: bytes | None, ids: list[str]) -> TestRun:
    results: dict[str, TestResult] = {}
    if report:
        try:
            results = parse_junit(report, ids)
        except ET.ParseError:
            report = None
    if not report:
        message = no_report_message(result.output, result.timed_out, result.exit_code)
        results = {n: TestResult(outcome="error", message=message) for n in ids}
    elif not is_debtest_report(ET.fromstring(report)):  # the Debian runner's say why in the report
        _explain_missing(results, result.output)
    return TestRun(
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        seconds=result.seconds,
        report_found=bool(report),
        results=results,
        output_tail=result.output[-8000:],
        refusals={node: kind for kind, node in NOT_FOUND.findall(ANSI.sub("", result.output))},
    )
