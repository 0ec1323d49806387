"""A sample holds at most SAMPLE_SECONDS of gold test time, and a sample of a suite too long
for its gold budget at most SAMPLE_FILES files; a fast suite's is drawn as it always was."""

from __future__ import annotations

import random

from cligym.invert.context import SAMPLE_FILES, SAMPLE_SECONDS, sample_tests
from cligym.models.gold import SuiteSample
from tests.unit.fake_engine import gold_env

TESTS = [f"t{i % 20}.py::t{i}" for i in range(60)]


def _sampled(tests: list[str], left_out: dict[str, str]) -> SuiteSample:
    files = list(dict.fromkeys(t.split("::")[0] for t in tests))
    return SuiteSample(budget_seconds=10, shards=2, seed=0, files=len(files) + len(left_out), tests=None,
                       packages=1, kept_packages=1, kept_files=files, left_out_files=left_out)


def test_a_fast_suite_run_whole_samples_as_it_always_did():
    gold = gold_env(TESTS)
    gold.durations = dict.fromkeys(TESTS, SAMPLE_SECONDS / 40)  # the 20 drawn fit; any number of files
    for suite in (None, _sampled(TESTS, {})):
        gold.suite = suite
        for seed in range(5):
            expected = set(random.Random(seed).sample(TESTS, 20))
            assert sample_tests(random.Random(seed), gold, 20) == [t for t in TESTS if t in expected]
            assert len({t.split("::")[0] for t in expected}) > SAMPLE_FILES


def test_a_slow_test_of_a_suite_run_whole_is_passed_over():
    gold = gold_env(TESTS)
    gold.suite = _sampled(TESTS, {})
    gold.durations = {t: 0.01 for t in TESTS} | {TESTS[3]: SAMPLE_SECONDS + 0.5}
    for seed in range(5):
        sample = sample_tests(random.Random(seed), gold, 60)
        assert sample == [t for t in TESTS if t != TESTS[3]]


def test_a_sampled_suite_is_sampled_within_the_time_and_the_files():
    gold = gold_env(TESTS)
    gold.suite = _sampled(TESTS, {"u.py": "not sampled"})
    gold.durations = {t: 0.01 for t in TESTS} | {TESTS[0]: SAMPLE_SECONDS + 1}
    for seed in range(5):
        sample = sample_tests(random.Random(seed), gold, 60)
        assert TESTS[0] not in sample and len({t.split("::")[0] for t in sample}) == SAMPLE_FILES
        assert sum(gold.durations[t] for t in sample) <= SAMPLE_SECONDS and sample == sorted(sample, key=TESTS.index)
    gold.durations = dict.fromkeys(TESTS, SAMPLE_SECONDS + 1) | {TESTS[7]: SAMPLE_SECONDS + 0.5}
    assert sample_tests(random.Random(1), gold, 60) == [TESTS[7]]  # none fits: the shortest drawn
