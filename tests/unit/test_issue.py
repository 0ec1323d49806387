"""Issue texts: three styles, hint filter, and the rule that hint-free text leaks no fix;
symptoms only where the errors show them, no claim the delta contradicts, cleaned error
excerpts, and the check that refuses a text breaking any of this (on recorded fixtures)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cligym.issue import (
    check_issues,
    check_text,
    clean_error,
    leaks,
    strip_hint,
    write_issues,
)
from cligym.issue.redact import HINT_PREFIX
from cligym.models.issue import IssueText, TaskIssues
from cligym.models.task import AppliedChange, DegradationQuery, Task

FIXTURES = Path(__file__).parents[1] / "data" / "issues"

LIB = "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13"


def make_task(instance_id: str = "demo.elf_magic_corrupt.abc", **over) -> Task:
    fields = {
        "instance_id": instance_id, "repo": "demo==1.0", "image_name": "cligym/gold-demo:1",
        "gold_image_id": "sha256:x", "workdir": "/testbed", "test_command": "python -m pytest",
        "dockerfile": [f"RUN printf '\\000\\000\\000\\000' | dd of={LIB} bs=1 count=4 conv=notrunc status=none"],
        "FAIL_TO_PASS": ["tests/test_z.py::test_compress", "tests/test_z.py::test_roundtrip"],
        "PASS_TO_PASS": ["tests/test_a.py::test_ok"],
        "selected_tests": ["tests/test_a.py::test_ok", "tests/test_z.py::test_compress",
                           "tests/test_z.py::test_roundtrip"],
        "solution": f"#!/bin/sh\nset -e\nprintf '\\177ELF' | dd of={LIB} bs=1 count=4 conv=notrunc status=none\n",
        "changed_paths": [LIB],
        "errors": {
            "tests/test_z.py::test_compress": f"E   ImportError: {LIB}: invalid ELF header",
            "tests/test_z.py::test_roundtrip": f"E   ImportError: {LIB}: invalid ELF header",
        },
        "applied": [AppliedChange(name="elf_magic_corrupt", category="dynamic_linking", target=LIB,
                                    symptom="Importing a compiled module fails with an invalid ELF header error",
                                    hint="how shared libraries are found and loaded")],
        "fail_fraction": 0.66, "suite_size": 3, "seed": 0, "attempt": 0,
    }
    fields.update(over)
    return Task(**fields)


def test_three_styles_each_with_hint_and_twin():
    issues = write_issues(make_task())
    assert set(issues.texts) == {"strong", "balanced", "weak"}
    for text in issues.texts.values():
        assert "Hint:" in text.with_hint and "shared libraries" in text.with_hint
        assert "Hint:" not in text.without_hint
        assert text.without_hint.strip() in text.with_hint
    strong = issues.texts["strong"].without_hint
    assert "tests/test_z.py::test_compress" in strong and "invalid ELF header" in strong
    weak = issues.texts["weak"].without_hint
    assert "invalid ELF header" not in weak and "tests/test_z.py" in weak


def test_hint_free_text_leaks_no_fix():
    task = make_task()
    for text in write_issues(task).texts.values():
        assert leaks(text.without_hint, task) == []
        assert LIB not in text.without_hint and LIB not in text.with_hint
        assert "libz.so.1.2.13" in write_issues(task).texts["strong"].without_hint  # basename stays


def test_leak_check_catches_fix_material():
    task = make_task()
    assert leaks(f"just run: {task.solution.splitlines()[2]}", task)
    assert leaks(f"the file {LIB} is damaged", task)
    assert leaks(task.dockerfile[0], task)
    assert not leaks("the file …/libz.so.1.2.13 is damaged", task)


def test_strip_hint_filter():
    text = "Tests fail.\n\nPlease fix.\n\nHint: look at locales.\n"
    assert strip_hint(text) == "Tests fail.\n\nPlease fix.\n"
    assert strip_hint("No hint here.\n") == "No hint here.\n"
    assert strip_hint("A.\n\n  hint: lower case too\n\nB.") == "A.\n\nB.\n"


def test_two_tasks_of_one_operator_read_differently():
    texts = {write_issues(make_task(f"demo.elf_magic_corrupt.{i}")).texts["strong"].without_hint for i in range(6)}
    assert len(texts) >= 3


def test_agent_task_hint_is_its_recovery_sentence_with_paths_redacted():
    query = DegradationQuery(title="t", category="dynamic_linking", selected_tests=["tests/test_z.py::test_compress"],
                             description="d",
                             recovery_strategy=f"Restore the first bytes of {LIB} from the installed package")
    task = make_task("demo.agent.abc", origin="agent", applied=[], query=query)
    for text in write_issues(task).texts.values():
        hint = [p.strip() for p in text.with_hint.split("\n\n") if p.startswith("Hint:")]
        assert hint == ["Hint: Restore the first bytes of …/libz.so.1.2.13 from the installed package."]
        assert "Hint:" not in text.without_hint and leaks(text.with_hint, task) == []


# ---- recorded fixtures (tests/data/issues) ---------------------------------------------

def fixture(name: str) -> Task:
    return Task.model_validate_json((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def all_texts(issues: TaskIssues) -> list[str]:
    return [t for issue in issues.texts.values() for t in (issue.with_hint, issue.without_hint)]


def naive_issues(task: Task) -> TaskIssues:
    """What the old writer made: the first operator's symptom whatever failed, the claim of
    an unchanged source, raw error excerpts with whatever the harness wrote into them."""
    f2p = sorted(task.FAIL_TO_PASS)
    raw = "\n".join(f"{t}:\n{task.errors.get(t, '')}" for t in f2p[:2])
    symptom = next((s for s in task.symptoms if s), "")
    text = (f"Tests in {task.repo.split('==')[0]} started failing and nobody touched the code. The project's "
            f"source is unchanged. {len(f2p)} tests that passed before now fail:\n\n```\n{raw}\n```\n\n"
            f"{symptom}\n\nPlease make them pass again.\n\n{HINT_PREFIX} Look at {task.hints[0]}.\n")
    text = text.replace(task.workdir + "/", "…/")  # the old writer redacted changed paths too
    for path in task.changed_paths:
        text = text.replace(path, "…/" + path.rsplit("/", 1)[-1])
    issue = IssueText(style="strong", with_hint=text, without_hint=strip_hint(text))
    return TaskIssues(instance_id=task.instance_id, texts={"strong": issue})


NAMES = sorted(p.stem for p in FIXTURES.glob("*.json"))


@pytest.mark.parametrize("name", NAMES)
def test_the_writers_texts_pass_the_check(name):
    task = fixture(name)
    issues = write_issues(task)
    assert check_issues(task, issues) == []
    for text in all_texts(issues):
        assert "\x1b" not in text and not re.search(r"\[\d+(;\d+)*m", text)
        assert leaks(text, task) == []


#: What the check finds in the old writer's text of each fixture (None: nothing, the old
#: text was right there: both operators' errors show, the delta stays outside the workdir).
NAIVE_PROBLEMS = {
    "ssl_masked_by_textwrap": "states the symptom of ca_bundle_garbage",
    "ssl_and_textwrap_shown": None,
    "workdir_shadow_ansi": "carries ANSI escape codes",
    "collection_error": "carries harness wording ('collection failure')",
    "harness_noise_no_report": "carries harness wording ('produced no report')",
    "harness_noise_missing": "carries harness wording ('not in the test report')",
}


def test_every_fixture_has_an_expectation():
    assert sorted(NAIVE_PROBLEMS) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_the_old_writers_texts_are_refused_with_the_right_problem(name):
    task = fixture(name)
    problems = check_issues(task, naive_issues(task))
    if NAIVE_PROBLEMS[name] is None:
        assert problems == []
    else:
        assert any(NAIVE_PROBLEMS[name] in p for p in problems), problems


def test_symptom_of_an_operator_whose_error_no_test_shows_is_not_stated():
    task = fixture("ssl_masked_by_textwrap")  # ssl applied first; every error is textwrap's
    ssl, textwrap = task.applied
    issues = write_issues(task)
    strong = issues.texts["strong"].without_hint
    assert textwrap.symptom in strong
    for text in all_texts(issues):
        assert ssl.symptom not in text and "SSL" not in text
    problems = check_issues(task, naive_issues(task))
    assert any("states the symptom of ca_bundle_garbage" in p for p in problems), problems
    assert not any("stdlib_module_removed" in p for p in problems)


def test_each_operator_the_errors_show_is_stated_once():
    task = fixture("ssl_and_textwrap_shown")
    ssl, textwrap = task.applied
    task.applied.append(textwrap.model_copy(update={"target": "/usr/lib/python3.11/textwrap.pyc"}))
    strong = write_issues(task).texts["strong"].without_hint
    assert strong.count(ssl.symptom) == 1 and strong.count(textwrap.symptom) == 1
    assert "SSLError" in strong and "No module named 'textwrap'" in strong  # one excerpt per distinct error
    assert check_issues(task, write_issues(task)) == []


def test_an_operator_is_judged_by_the_errors_of_the_tests_it_is_responsible_for():
    task = fixture("ssl_and_textwrap_shown")
    ssl, textwrap = task.applied
    ssl.fixes = list(textwrap.fixes)  # its own tests show textwrap's error, not an SSL one
    strong = write_issues(task).texts["strong"].without_hint
    assert ssl.symptom not in strong and textwrap.symptom in strong
    ssl.fixes = []  # no evidence: every F2P error counts, and the TLS tests show SSLError
    assert ssl.symptom in write_issues(task).texts["strong"].without_hint


def test_without_a_matching_operator_the_errors_speak():
    task = fixture("ssl_masked_by_textwrap")
    for op in task.applied:
        op.shows = []
    strong = write_issues(task).texts["strong"].without_hint
    assert not any(op.symptom in strong for op in task.applied)
    assert "All of them report `ModuleNotFoundError: No module named 'textwrap'`." in strong
    assert check_issues(task, write_issues(task)) == []
    # an operator declaring no patterns is never stated
    task = fixture("harness_noise_missing")
    strong = write_issues(task).texts["strong"].without_hint
    assert task.applied[0].symptom not in strong and "None of them ran (pytest: no tests ran" in strong


def test_no_unchanged_source_claim_when_the_delta_changes_the_workdir():
    task = fixture("workdir_shadow_ansi")  # ΔD writes /testbed/typing.py
    for text in all_texts(write_issues(task)):
        assert "unchanged" not in text and "nobody touched" not in text
    problems = check_issues(task, naive_issues(task))
    assert any("claims the source is unchanged" in p and "/testbed/typing.py" in p for p in problems), problems
    # the ΔD lines alone are evidence enough (a record without changed paths)
    task.changed_paths = []
    assert any("claims the source is unchanged" in p for p in check_issues(task, naive_issues(task)))
    # a delta outside the workdir may be described so
    ssl = fixture("ssl_masked_by_textwrap")
    assert "The project's source is unchanged." in write_issues(ssl).texts["strong"].without_hint


def test_check_reads_texts_not_templates():
    task = fixture("ssl_masked_by_textwrap")
    paraphrase = ("The suite is red. We believe creating an SSL context fails with ssl.SSLError here. "
                  "Please fix it.\n")
    assert any("ca_bundle_garbage" in p for p in check_text(task, paraphrase))
    shadow = fixture("workdir_shadow_ansi")
    for claim in ("No one has touched the code since Monday.", "The project files remain untouched."):
        assert any("claims the source is unchanged" in p for p in check_text(shadow, claim)), claim
    assert check_text(shadow, "The code in the checkout may have changed.") == []
    # quoting an error is the errors speaking, not a symptom stated
    assert check_text(task, "It fails with\n\n    ModuleNotFoundError: No module named 'textwrap'\n") == []


def test_check_refuses_noise_leaks_and_hints_in_the_twin():
    task = fixture("harness_noise_no_report")
    assert any("ANSI" in p for p in check_text(task, "It fails: \x1b[31mboom\x1b[0m"))
    assert any("ANSI" in p for p in check_text(task, "It fails: [1m[31mE   boom[0m"))
    for noise in ("not in the test report", "not collected under this id", "the test command produced no report",
                  "cligym-tests: 1: python: not found", "see /tmp/cligym-report.xml"):
        assert any("harness wording" in p for p in check_text(task, f"It fails: {noise}\n")), noise
    assert any("reveals the fix" in p for p in check_text(task, "run ln -sfn /usr/bin/python3.11 /opt/venv/bin/python"))
    assert any("hint" in p for p in check_text(task, "Fails.\n\nHint: look at python.\n", hint_free=True))
    ok = write_issues(task)
    assert check_issues(task.model_copy(update={"instance_id": "other"}), ok)  # texts of another task


def test_collection_error_shows_the_real_error():
    task = fixture("collection_error")
    strong = write_issues(task).texts["strong"].without_hint
    assert "E   ModuleNotFoundError: No module named 'textwrap'" in strong
    assert "ImportError while importing test module '/testbed/tests/test_lowlevel.py'." in strong
    assert "collection failure" not in strong and "valid Python names" not in strong
    balanced = write_issues(task).texts["balanced"].without_hint
    assert "ModuleNotFoundError: No module named 'textwrap'" in balanced


def test_harness_noise_is_cleaned_from_the_excerpts():
    noreport = write_issues(fixture("harness_noise_no_report")).texts["strong"].without_hint
    assert "sh: 1: python: not found" in noreport
    assert "cligym" not in noreport and "no report" not in noreport and "output ended" not in noreport
    ansi = write_issues(fixture("workdir_shadow_ansi")).texts["strong"].without_hint
    assert "ImportError: cannot import name 'Any' from 'typing' (…/typing.py)" in ansi
    missing = write_issues(fixture("harness_noise_missing")).texts["strong"].without_hint
    assert "this test did not run (pytest: no tests ran in 0.05s)" in missing
    assert "not in the test report" not in missing and "under this id" not in missing


def test_clean_error_lines():
    raw = ("\x1b[1m\x1b[31mE   ValueError: bad\x1b[0m\n[1m[31mE   KeyError: 'x'[0m\n"
           "- generated xml file: /tmp/cligym-report.xml -\n"
           "__main__.py: error: unrecognized arguments: -p no:cacheprovider -o junit_family=xunit1 "
           "--junitxml=/tmp/cligym-report.xml --frobnicate\n"
           "the test command produced no report (timed out); its output ended with:\n")
    assert clean_error(raw) == ("E   ValueError: bad\nE   KeyError: 'x'\n"
                                "__main__.py: error: unrecognized arguments: --frobnicate\n"
                                "(the test command timed out)")
    assert clean_error("not in the test report") == "this test did not run"
    assert clean_error("") == ""
    # the known cost of dropping colour codes that lost their escape: text that looks like one
    assert clean_error("E   assert f('[x]') == '[1m'") == "E   assert f('[x]') == ''"
