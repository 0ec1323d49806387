"""Inversion by an LLM agent without a container: query parsing and the agent's Dockerfile."""

from __future__ import annotations

import base64
import json

import pytest

from cligym.invert.dockerfile import parse_dockerfile
from cligym.invert.query import QueryError, parse_query

SAMPLE = ["tests/a.py::t1", "tests/a.py::t2", "tests/b.py::t3[x]", "tests/b.py::t4"]


def test_parse_query_keeps_listed_tests_in_suite_order():
    text = "Here it is:\n```json\n" + json.dumps({
        "title": "Bad loader cache", "category": "dynamic linking",
        "selected_tests": ["tests/b.py::t4", "tests/nowhere.py::x", "tests/a.py"],
        "description": "Do it.", "expected_error": "ImportError", "recovery_strategy": "Undo it.",
    }) + "\n```"
    query = parse_query(text, SAMPLE)
    assert query.selected_tests == ["tests/a.py::t1", "tests/a.py::t2", "tests/b.py::t4"]
    assert query.title == "Bad loader cache"


@pytest.mark.parametrize("text, why", [
    ("no json here", "no JSON object"),
    ('{"title": "x", "category": "y", "selected_tests": ["tests/a.py::t1"],', "does not parse"),
    ('{"title": "x", "category": "y", "selected_tests": ["tests/zz.py::q"], "description": "d"}', "none of the listed"),
    ('{"title": "", "category": "y", "selected_tests": ["tests/a.py::t1"], "description": "d"}', "title"),
    ('{"title": "x", "category": "y", "selected_tests": ["tests/a.py::t1"]}', "description"),
])
def test_parse_query_rejects_unusable_answers(text, why):
    with pytest.raises(QueryError, match=why):
        parse_query(text, SAMPLE)


def test_parse_query_skips_braces_in_surrounding_prose():
    text = ('<think>maybe a {dict} of paths</think>\n{"title": "x", "category": "Dynamic Linking!", '
            '"selected_tests": ["tests/a.py::t1"], "description": "d", "extra": {"k": 1}}\nDone {a,b}.')
    query = parse_query(text, SAMPLE)
    assert query.title == "x" and query.category == "dynamic_linking"


def test_parse_query_caps_the_selection_at_fifty():
    sample = [f"tests/t.py::t{i}" for i in range(80)]
    query = parse_query(json.dumps({"title": "x", "category": "y", "selected_tests": ["tests/t.py"],
                                    "description": "d"}), sample)
    assert query.selected_tests == sample[:50]


def test_parse_dockerfile_keeps_run_lines_and_records_the_rest():
    text = (
        "```dockerfile\nFROM somewhere\n# a comment\nENV PYTHONPATH=/x\n"
        "RUN printf 'a' \\\n    # inner comment\n    > /tmp/f && \\\n    chmod 644 /tmp/f\n"
        "COPY x /y\nrun echo lower\n\n```\n"
    )
    kept, dropped = parse_dockerfile(text)
    assert kept == ["RUN printf 'a'     > /tmp/f &&     chmod 644 /tmp/f", "RUN echo lower"]
    assert [d.split()[0] for d in dropped] == ["FROM", "ENV", "COPY"]
    assert "cannot be undone" in dropped[1]


def test_parse_dockerfile_joins_like_docker_and_carries_heredocs():
    text = ("\ufeffRUN a && \\\n\n  b\n"
            "RUN cat > /etc/x.conf <<'EOF'\nkey = 1  # not a comment\nEOF\n"
            "RUN <<EOF\necho hi\nEOF\n"
            "RUN y <<EOF\nnever closed\n")
    kept, dropped = parse_dockerfile(text)
    assert kept[0] == "RUN a &&   b"
    scripts = [base64.b64decode(line.split()[2]).decode() for line in kept[1:]]
    assert scripts == ["cat > /etc/x.conf <<'EOF'\nkey = 1  # not a comment\nEOF\n", "echo hi\n"]
    assert all(line.endswith("| base64 -d | sh") for line in kept[1:])
    assert dropped == ["RUN y <<EOF  # an unterminated heredoc"]
