"""The LLM issue writer against scripted replies: a good text is used for the style the
seed chose, a text that leaks the fix is sent back and a clean one used, two leaking texts
leave the template's; tokens and refusals are recorded."""

from __future__ import annotations

import json

from cligym.agents.client import ModelClient, ModelConfig
from cligym.issue import check_issues, write_issues
from cligym.issue.llm import chosen_style, llm_issues, write_llm_issues
from cligym.layout import RunDir
from cligym.models.io import load, save
from cligym.models.issue import TaskIssues
from tests.llm_server import reply
from tests.unit.test_issue import LIB, make_task

GOOD = {"issue": "Since this morning tests/test_z.py::test_compress fails with 'invalid ELF header' when "
                 "the compression module is imported. The tests themselves are fine; please get them passing.",
        "hint": "Look at how shared libraries are found and loaded."}
#: names the corrupted library's path, which the delta changed: it tells where the fix goes
LEAKING = {"issue": f"The file {LIB} has a damaged header, so tests fail.", "hint": "Restore its magic bytes."}


def _client(server) -> ModelClient:
    return ModelClient(ModelConfig(model="writer", base_url=server.base_url, max_retries=0))


def _answer(data: dict, **usage) -> object:
    return reply("Here is the report:\n" + json.dumps(data), **usage)


def test_a_good_text_fills_the_seeded_style(scripted_server):
    task = make_task()
    server = scripted_server([_answer(GOOD, prompt_tokens=300, completion_tokens=60)])
    issues = llm_issues(task, _client(server), seed=4)
    style = chosen_style(task, 4)
    assert issues.writer == "llm" and issues.style == style and issues.refused == []
    assert issues.texts[style].with_hint.startswith(GOOD["issue"]) and "Hint: Look at how shared" in \
        issues.texts[style].with_hint
    assert "Hint:" not in issues.texts[style].without_hint
    assert (issues.prompt_tokens, issues.completion_tokens) == (300, 60)
    template = write_issues(task)
    assert all(issues.texts[s] == template.texts[s] for s in issues.texts if s != style)
    assert check_issues(task, issues) == []
    prompt = server.requests[0]["messages"][1]["content"]
    assert "invalid ELF header" in prompt and LIB not in prompt and "printf" not in prompt  # no answer given away


def test_styles_are_spread_over_tasks_by_seed():
    tasks = [make_task(f"demo.elf_magic_corrupt.{i}") for i in range(12)]
    assert len({chosen_style(t, 0) for t in tasks}) == 3
    assert [chosen_style(t, 0) for t in tasks] == [chosen_style(t, 0) for t in tasks]


def test_a_leaking_text_is_sent_back_and_a_clean_one_used(scripted_server):
    server = scripted_server([_answer(LEAKING), _answer(GOOD)])
    issues = llm_issues(make_task(), _client(server))
    assert issues.writer == "llm" and len(issues.refused) == 1 and "reveals the fix" in issues.refused[0]
    assert "reveals the fix" in server.requests[1]["messages"][-1]["content"]
    assert LIB not in issues.texts[issues.style].with_hint


def test_two_leaking_texts_leave_the_template(scripted_server, tmp_path):
    task = make_task()
    run = RunDir(tmp_path / "run")
    save(task, run.task_record(task.instance_id))
    server = scripted_server([_answer(LEAKING), reply("no JSON at all")])
    assert write_llm_issues(run.path, _client(server)) == (0, 1)
    issues = load(TaskIssues, run.issues(task.instance_id))
    assert issues.writer == "template" and len(issues.refused) == 2 and issues.texts == write_issues(task).texts
    assert write_llm_issues(run.path, _client(server)) == (0, 0)  # tried twice already: not asked again
    assert len(server.requests) == 2
