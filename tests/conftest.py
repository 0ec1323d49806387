"""Shared by both tiers: the scripted OpenAI-compatible server's fixtures.

The tests come in two tiers: ``tests/unit`` (pure logic; no engine may be reached there)
and ``tests/engine`` (the real Docker engine and real PyPI projects; its fixtures live in
``tests/engine/conftest.py``). Long end-to-end cases of either are marked ``slow``.
"""

#: The scripted OpenAI-compatible server's fixtures, for every test module.
pytest_plugins = ["tests.llm_fixtures"]


def pytest_sessionfinish(session, exitstatus):
    """In the controller of pytest-xdist workers, once all have ended: remove the shared
    images they made (``tests/engine/shared.py``)."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    from tests.engine.shared import finish

    finish(config._tmp_path_factory.getbasetemp())
