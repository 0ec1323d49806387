"""locale_encoding operators, applied to real gold images and repaired."""

from __future__ import annotations

from .conftest import check_operator
from .fixtures_envtouch import envtouch  # noqa: F401  (the session fixture)

LOCALE_TESTS = "tests/test_locale.py::"
TEXT_TESTS = "tests/test_text.py::"


def test_locale_charset_mislabeled(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "locale_charset_mislabeled")
    assert result["lines"][-1] == "ENV LANG=en_US.UTF-8"
    assert f"{TEXT_TESTS}test_read_shipped_notes" in result["failing"]
    assert f"{TEXT_TESTS}test_ascii_notes_round_trip" not in result["failing"]
    assert f"{TEXT_TESTS}test_read_shipped_notes" in result["target"].touching


def test_locale_separators_swapped(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "locale_separators_swapped")
    assert len([ln for ln in result["lines"] if ln.startswith("RUN")]) == 1
    assert f"{LOCALE_TESTS}test_decimal_point_is_a_dot" in result["failing"]
    assert f"{LOCALE_TESTS}test_amounts_round_trip" not in result["failing"]
    assert all(t.startswith(LOCALE_TESTS) for t in result["failing"])


def test_locale_not_generated(runtime, envtouch):  # noqa: F811
    gold, probe = envtouch
    result = check_operator(runtime, gold, probe, "locale_not_generated")
    assert f"{LOCALE_TESTS}test_numeric_locale_follows_the_environment" in result["failing"]
    assert all(t.startswith(LOCALE_TESTS) for t in result["failing"])


def test_locale_charset_mislabeled_python_dotenv(runtime, probed):
    """python-dotenv sets os.environ from a .env with non-ASCII text: in an ASCII locale
    the value cannot be encoded for the environment."""
    gold, probe = probed("python-dotenv==1.2.1")
    result = check_operator(runtime, gold, probe, "locale_charset_mislabeled")
    assert "tests/test_main.py::test_load_dotenv_string_io_utf_8" in result["failing"]
    assert set(result["failing"]) <= set(result["target"].touching)
