"""Issue texts in number with their tests: every template of the writer, rendered for one
failing test and for several, says "1 test ... fails" and "3 tests ... fail", never a
plural for one test or a singular for several; the texts for several tests are the ones the
writer always wrote (the same seed gives the same texts, only the one-test grammar moved)."""

from __future__ import annotations

import re

import pytest

from cligym.issue import error_sentence, write_issues
from cligym.issue.check import check_issues
from cligym.issue.clean import DID_NOT_RUN
from cligym.issue.llm import _prompt
from cligym.issue.writer import ASKS_BALANCED, ASKS_STRONG, ASKS_WEAK, CLAIMING_OPENINGS, OPENINGS
from tests.unit.test_issue import make_task

ONE = ["tests/test_z.py::test_compress"]
SEVERAL = ["tests/test_y.py::test_other", "tests/test_z.py::test_compress", "tests/test_z.py::test_roundtrip"]
ERROR = "E   ImportError: libz.so.1: invalid ELF header"
#: enough instance ids that every phrasing of every list is picked for some of them
IDS = [f"demo.elf_magic_corrupt.{i}" for i in range(80)]
#: what a text about one failing test must never say
PLURAL_FOR_ONE = re.compile(r"\b1 tests\b|\b1 test (that passed before now )?fail\b|\b1 of them\b|\bthey\b|\bthem\b"
                            r"|\bthese\b|\bthe tests\b|\bnone of them\b|\ball of them\b", re.IGNORECASE)


def task_with(f2p: list[str], errors: bool = True, instance_id: str = IDS[0], **over):
    return make_task(instance_id, FAIL_TO_PASS=f2p, errors={t: ERROR for t in f2p} if errors else {}, **over)


def rendered(style: str, f2p: list[str], errors: bool = True, **over) -> list[str]:
    return [write_issues(task_with(f2p, errors, i, **over)).texts[style].with_hint for i in IDS]


def picked_everywhere(texts: list[str], variants: list[str]) -> None:
    """Each text carries one of ``variants``, and every variant is carried by some text."""
    assert all(any(v in text for v in variants) for text in texts), texts
    assert all(any(v in text for text in texts) for v in variants), variants


def test_strong_opening_sentence_agrees():
    for text in rendered("strong", ONE):
        assert " 1 test that passed before now fails when run from `/testbed` with `python -m pytest`:" in text
        assert "The error it reports:\n" in text and "The errors they report:" not in text
    for text in rendered("strong", SEVERAL):
        assert " 3 tests that passed before now fail when run from `/testbed` with `python -m pytest`:" in text
        assert "The errors they report:\n" in text and "The error it reports:" not in text


@pytest.mark.parametrize(("style", "asks"), [("strong", ASKS_STRONG), ("balanced", ASKS_BALANCED),
                                             ("weak", ASKS_WEAK)])
def test_each_ask_agrees(style, asks):
    several, one = zip(*asks, strict=True)
    picked_everywhere(rendered(style, ONE), list(one))
    picked_everywhere(rendered(style, SEVERAL), list(several))
    for text in rendered(style, ONE):
        assert not any(s in text for s in several if s not in one), text
    for text in rendered(style, SEVERAL):
        assert not any(o in text for o in one if o not in several), text


def test_each_opening_agrees():
    """The claiming opening only where the delta leaves the workdir alone (it does here)."""
    several, one = zip(*(CLAIMING_OPENINGS + OPENINGS), strict=True)
    picked_everywhere(rendered("strong", ONE), [o.format(project="demo") for o in one])
    picked_everywhere(rendered("strong", SEVERAL), [s.format(project="demo") for s in several])
    assert "A test in demo started failing and nobody touched the code." in one[0].format(project="demo")
    for text in rendered("balanced", ONE):
        assert "demo's tests fail" not in text and "Tests in demo started" not in text


def test_balanced_lead_agrees():
    for text in rendered("balanced", ONE):
        assert " 1 test fails: `tests/test_z.py::test_compress`, with:\n\n    ImportError: " in text
    for text in rendered("balanced", ONE, errors=False):
        assert " 1 test fails: `tests/test_z.py::test_compress`.\n" in text
    for text in rendered("balanced", SEVERAL):
        assert " 3 tests fail, for example `tests/test_y.py::test_other`, with:\n\n    ImportError: " in text
    for text in rendered("balanced", SEVERAL, errors=False):
        assert " 3 tests fail, for example `tests/test_y.py::test_other`.\n" in text


def test_weak_lead_agrees():
    for text in rendered("weak", ONE):
        assert text.startswith("One test of demo fails (in `tests/test_z.py`). ")
    for text in rendered("weak", SEVERAL):
        assert text.startswith("Some tests of demo fail (3 of them, in `tests/test_y.py`, `tests/test_z.py`). ")
    many = [f"tests/test_{i}.py::test_x" for i in range(6)]
    for text in rendered("weak", many):
        assert text.startswith("Some tests of demo fail (6 of them, in `tests/test_0.py`, `tests/test_1.py`, "
                               "`tests/test_2.py`, `tests/test_3.py` and more). ")


@pytest.mark.parametrize("style", ["strong", "balanced", "weak"])
def test_no_plural_speaks_of_one_test(style):
    for errors in (True, False):
        for text in rendered(style, ONE, errors):
            assert not PLURAL_FOR_ONE.search(text), text


@pytest.mark.parametrize("style", ["strong", "balanced", "weak"])
def test_one_test_texts_pass_the_check(style):
    for instance_id in IDS[:10]:
        task = task_with(ONE, instance_id=instance_id)
        assert check_issues(task, write_issues(task)) == []


def errors_sentence(errors: dict[str, str], f2p: list[str]) -> str:
    return error_sentence(make_task(FAIL_TO_PASS=f2p, errors=errors, applied=[]))


def test_error_sentence_agrees():
    did_not_run = f"E   {DID_NOT_RUN} (pytest: no tests ran)"
    assert errors_sentence({ONE[0]: ERROR}, ONE) == "It reports `ImportError: libz.so.1: invalid ELF header`."
    assert errors_sentence(dict.fromkeys(SEVERAL, ERROR), SEVERAL) == (
        "All of them report `ImportError: libz.so.1: invalid ELF header`.")
    assert errors_sentence({ONE[0]: did_not_run}, ONE) == "It did not run (pytest: no tests ran)."
    assert errors_sentence(dict.fromkeys(SEVERAL, did_not_run), SEVERAL) == "None of them ran (pytest: no tests ran)."
    assert errors_sentence({SEVERAL[0]: did_not_run}, SEVERAL) == (
        "1 of the 3 failing tests did not run (pytest: no tests ran).")
    assert errors_sentence({SEVERAL[0]: ERROR}, SEVERAL) == (
        "1 of the 3 failing tests reports `ImportError: libz.so.1: invalid ELF header`.")
    five = [f"tests/test_z.py::test_{i}" for i in range(5)]
    assert errors_sentence(dict.fromkeys(five[:2], ERROR), five) == (
        "2 of the 5 failing tests report `ImportError: libz.so.1: invalid ELF header`.")
    assert errors_sentence(dict.fromkeys(five[:3], ERROR), five) == (
        "Most of them report `ImportError: libz.so.1: invalid ELF header`.")


def test_model_prompt_agrees():
    one = _prompt(task_with(ONE), "weak")
    assert "Failing test (1):\n" in one and "Error lines it shows:\n" in one
    several = _prompt(task_with(SEVERAL), "weak")
    assert "Failing tests (3):\n" in several and "Error lines they show:\n" in several


def test_one_seed_picks_the_same_phrasings_in_either_number():
    """The texts for several tests are word for word what the writer wrote before it knew
    the singular; for one test the same seed picks the same opening, ask and hint lead."""
    several = write_issues(task_with(SEVERAL)).texts
    error = "ImportError: libz.so.1: invalid ELF header"
    hint = "Hint: It may help to check how shared libraries are found and loaded.\n"
    assert several["strong"].with_hint == (
        "After the last change to this machine, demo's tests fail. The project's source is unchanged. "
        "3 tests that passed before now fail when run from `/testbed` with `python -m pytest`:\n\n"
        "- `tests/test_y.py::test_other`\n- `tests/test_z.py::test_compress`\n- `tests/test_z.py::test_roundtrip`\n\n"
        f"The errors they report:\n\n```\ntests/test_y.py::test_other:\nE   {error}\n"
        f"tests/test_z.py::test_compress:\nE   {error}\n```\n\nAll of them report `{error}`.\n\n"
        "Track down what in the environment causes this and fix it; the tests themselves are correct and "
        f"must not be changed.\n\n{hint}")
    assert several["balanced"].with_hint == (
        "After the last change to this machine, demo's tests fail. 3 tests fail, for example "
        f"`tests/test_y.py::test_other`, with:\n\n    {error}\n\n"
        f"Get the suite green again (leave the tests as they are).\n\n{hint}")
    assert several["weak"].with_hint == (
        "Some tests of demo fail (3 of them, in `tests/test_y.py`, `tests/test_z.py`). This worked until recently; "
        "please restore it.\n\nHint: Look at how shared libraries are found and loaded.\n")
    one = write_issues(task_with(ONE)).texts
    assert one["strong"].with_hint == (
        "After the last change to this machine, a demo test fails. The project's source is unchanged. "
        "1 test that passed before now fails when run from `/testbed` with `python -m pytest`:\n\n"
        "- `tests/test_z.py::test_compress`\n\n"
        f"The error it reports:\n\n```\ntests/test_z.py::test_compress:\nE   {error}\n```\n\nIt reports `{error}`.\n\n"
        "Track down what in the environment causes this and fix it; the test itself is correct and "
        f"must not be changed.\n\n{hint}")
    assert one["balanced"].with_hint == (
        f"After the last change to this machine, a demo test fails. 1 test fails: `tests/test_z.py::test_compress`, "
        f"with:\n\n    {error}\n\nGet the suite green again (leave the test as it is).\n\n{hint}")
    assert one["weak"].with_hint == (
        "One test of demo fails (in `tests/test_z.py`). This worked until recently; please restore it.\n\n"
        "Hint: Look at how shared libraries are found and loaded.\n")
