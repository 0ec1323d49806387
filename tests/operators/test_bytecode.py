"""bytecode operators, each applied to a real gold image, broken and repaired."""

from tests.operators.conftest import check_operator


def test_stale_pyc_unchecked(runtime, probed):
    gold, probe = probed("h11==0.16.0")
    result = check_operator(runtime, gold, probe, "stale_pyc_unchecked")
    assert result["target"].path.startswith("/testbed/h11/")


def test_sourceless_pyc_stale(runtime, probed):
    gold, probe = probed("environs==15.2.0")
    result = check_operator(runtime, gold, probe, "sourceless_pyc_stale")
    assert result["target"].path.endswith(".py")
