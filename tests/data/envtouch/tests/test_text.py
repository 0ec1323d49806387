from pathlib import Path

import envtouch

NOTES = Path(__file__).parent / "data" / "notes.txt"


def test_default_encoding_is_utf8():
    assert envtouch.requested_locale("LC_CTYPE")
    assert envtouch.default_encoding() == "utf-8"


def test_read_shipped_notes():
    text = envtouch.read_note(NOTES)
    assert "Zürich" in text and "Αθήνα" in text


def test_copy_notes_round_trip(tmp_path):
    text = envtouch.read_note(NOTES)
    target = tmp_path / "copy.txt"
    envtouch.save_note(target, text.upper())
    assert envtouch.read_note(target) == text.upper()
    assert target.read_bytes() == text.upper().encode("utf-8")


def test_ascii_notes_round_trip(tmp_path):
    target = tmp_path / "plain.txt"
    envtouch.save_note(target, "plain ascii\n")
    assert envtouch.read_note(target) == "plain ascii\n"
