"""The host's apt sources become the private state's: every entry with deb and deb-src,
Signed-By and options kept, disabled entries and other files left out."""

from __future__ import annotations

from pathlib import Path

from cligym.debian.deb822 import paragraphs
from cligym.debian.hostsources import host_entries, list_entries, render, sources_entries
from cligym.runtime.base_image import host_apt_sources

MIRROR = "http://mirror.example/debian"

LIST = f"""\
# the main list
deb [arch=amd64 signed-by=/usr/share/keyrings/example.gpg] {MIRROR} bookworm main contrib
deb-src [arch=amd64 signed-by=/usr/share/keyrings/example.gpg] {MIRROR} bookworm main contrib
deb {MIRROR}-security bookworm-security main  # trailing comment
deb file:/srv/flat ./
not-an-entry at all
"""

SOURCES = f"""\
Types: deb
# a comment inside the paragraph
URIs: {MIRROR}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/example.gpg

Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no
"""


def test_one_line_entries_keep_their_options() -> None:
    entries = list_entries(LIST)
    assert entries[0] == {"URIs": MIRROR, "Suites": "bookworm", "Components": "main contrib",
                          "Architectures": "amd64", "Signed-By": "/usr/share/keyrings/example.gpg"}
    assert entries[0] == entries[1]  # deb and deb-src of one entry
    assert entries[2] == {"URIs": f"{MIRROR}-security", "Suites": "bookworm-security", "Components": "main"}
    assert entries[3] == {"URIs": "file:/srv/flat", "Suites": "./"}
    assert len(entries) == 4


def test_deb822_entries_skip_the_disabled_and_drop_types() -> None:
    (entry,) = sources_entries(SOURCES)
    assert entry == {"URIs": MIRROR, "Suites": "bookworm bookworm-updates", "Components": "main",
                     "Signed-By": "/usr/share/keyrings/example.gpg"}


def test_host_files_are_read_once_each_and_rendered_with_both_types(tmp_path: Path) -> None:
    etc = tmp_path / "apt"
    (etc / "sources.list.d").mkdir(parents=True)
    (etc / "sources.list").write_text(LIST)
    (etc / "sources.list.d" / "main.sources").write_text(SOURCES)
    (etc / "sources.list.d" / "old.list.disabled").write_text(f"deb {MIRROR}-old bookworm main\n")
    files = host_apt_sources(etc)
    assert [f.name for f in files] == ["sources.list", "main.sources"]
    entries = host_entries(files)
    assert len(entries) == 4
    rendered = list(paragraphs(render(entries).splitlines()))
    assert {p["Types"] for p in rendered} == {"deb deb-src"}
    assert rendered[0]["Signed-By"] == "/usr/share/keyrings/example.gpg"
    assert [p["URIs"] for p in rendered].count(MIRROR) == 2


def test_an_inline_key_survives_rendering() -> None:
    key = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBGR\n-----END PGP PUBLIC KEY BLOCK-----"
    text = render([{"URIs": MIRROR, "Suites": "bookworm", "Components": "main", "Signed-By": key}])
    assert " .\n" in text
    (back,) = paragraphs(text.splitlines())
    assert back["Signed-By"] == key


def test_nothing_renders_to_nothing() -> None:
    assert render([]) == ""
    assert host_apt_sources(Path("/nonexistent/apt")) == []
