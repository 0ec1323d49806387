"""Shared by both tiers: the scripted OpenAI-compatible server's fixtures.

The tests come in two tiers: ``tests/unit`` (pure logic; no engine may be reached there)
and ``tests/engine`` (the real Docker engine and real PyPI projects; its fixtures live in
``tests/engine/conftest.py``). Long end-to-end cases of either are marked ``slow``.
"""

#: The scripted OpenAI-compatible server's fixtures, for every test module.
pytest_plugins = ["tests.llm_fixtures"]


#: Engine modules that take a minute or more here, in the order pytest-xdist starts them
#: (``--no-loadscope-reorder`` keeps it): the longest first, so that the many short modules
#: fill the workers at the end. The first makes the shared markupsafe run; its other readers
#: (test_invert, test_rollout) come once it is likely made.
LONG_FIRST = tuple(f"tests/engine/{name}.py" for name in (
    "test_export", "operators/test_table", "test_dataset_build", "test_probes", "test_reward_attacks", "test_registry",
    "test_scenarios", "test_verifier_holes", "test_invert_agent", "test_demo", "test_verifier_loader",
    "test_verifier_cheats", "test_invert", "test_rollout", "test_invert_quality", "test_guard", "test_sharing",
    "test_invert_parallel", "test_signals", "test_gold_repair",
))


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(LONG_FIRST)))
