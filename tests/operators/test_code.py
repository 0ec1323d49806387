"""code operators (one-line ΔC mutations), each checked on a real gold image."""

from __future__ import annotations

from .conftest import check_operator


def test_code_comparison_flipped(runtime, probed):
    gold, probe = probed("markupsafe==3.0.2")
    result = check_operator(runtime, gold, probe, "code_comparison_flipped")
    assert "s/ == / != /" in result["lines"][0]


def test_code_return_flipped(runtime, probed):
    gold, probe = probed("h11==0.16.0")
    result = check_operator(runtime, gold, probe, "code_return_flipped")
    assert result["target"].path.startswith("/testbed/h11/")


def test_code_boundary_shifted(runtime, probed):
    gold, probe = probed("apispec==6.10.1")
    result = check_operator(runtime, gold, probe, "code_boundary_shifted")
    assert "s/ < / <= /" in result["lines"][0]
