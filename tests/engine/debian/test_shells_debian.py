"""A Debian gold's shells see its environment as a Python gold's do (``tests/engine/test_shells.py``):
every kind of shell has the image's PATH and variables (its runner's ``DEBTEST_AWK``), and a
PATH the container is started with reaches them all."""

from __future__ import annotations

from cligym.models.gold import GoldEnv
from tests.engine.test_shells import assert_every_shell_follows_the_container, assert_every_shell_sees_the_image_env


def test_every_shell_of_a_debian_gold_sees_its_environment(perl_gold: GoldEnv, runtime) -> None:
    assert_every_shell_sees_the_image_env(runtime, perl_gold.image, None)  # the base has no `python`
    assert_every_shell_follows_the_container(runtime, perl_gold.image)
