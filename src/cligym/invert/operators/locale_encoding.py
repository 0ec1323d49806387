"""Operators: locale_encoding.

Each one leaves an ``ENV`` naming a locale (an ``ENV`` cannot be undone by a script), so
every repair compiles that locale again from the definition the ``locales`` package ships.
"""

from __future__ import annotations

import re

from cligym.invert.operators.base import GoldFiles, Operator, register
from cligym.invert.operators.probing import own_touch, project_root
from cligym.invert.operators.targets import Target, TargetData, q, run_python
from cligym.models.probe import Probe

CATEGORY = "locale_encoding"

DEFINITIONS = "/usr/share/i18n/locales"
CHARMAPS = "/usr/share/i18n/charmaps"
LOCALEDEF = "/usr/bin/localedef"
ARCHIVE = "/usr/lib/locale/locale-archive"
#: Standard locales with a dot as decimal point, tried in this order.
CANDIDATES = ("en_US", "en_GB")
#: Environment variables through which code asks for the user's locale.
LOCALE_VARS = frozenset({
    "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_MONETARY", "LC_TIME",
    "LC_COLLATE", "LC_MESSAGES",
})
#: Variables only code that sets a locale category reads (gettext reads none of them).
CATEGORY_VARS = frozenset({"LC_CTYPE", "LC_NUMERIC", "LC_MONETARY", "LC_TIME", "LC_COLLATE", "PYTHONIOENCODING"})
CTYPE_VARS = frozenset({"LANG", "LC_ALL", "LC_CTYPE", "PYTHONIOENCODING", "PYTHONUTF8"})
NUMERIC_VARS = frozenset({"LANG", "LC_ALL", "LC_NUMERIC", "LC_MONETARY"})
LOCALE_DIRS = ("/usr/lib/locale/", "/usr/share/i18n/", "/usr/share/locale/")
#: Text files read in the default encoding (their bytes are checked in prepare).
TEXT_SUFFIXES = (".txt", ".csv", ".tsv", ".json", ".md", ".rst", ".ini", ".cfg", ".toml", ".yaml",
                 ".yml", ".html", ".htm", ".xml", ".env", ".po", ".conf", ".log", ".sql")


def _locale_tests(probe: Probe, tests: list[str], variables: frozenset[str], copies: bool = False) -> list[str]:
    """Tests that ask for the locale themselves: they read one of ``variables`` or open
    compiled locale data. Reads made by the session start-up do not count, nor gettext's
    lookup of a message catalog (it reads LANGUAGE or LC_MESSAGES but needs no locale), nor,
    unless ``copies``, a copy of the whole environment (e.g. for a subprocess)."""
    out = []
    for test in tests:
        mine = own_touch(probe, test)
        env = set(mine.env)
        if not copies and probe.env and len(env & set(probe.env)) >= max(3, 0.8 * len(probe.env)):
            env -= set(probe.env)
        if env & {"LANGUAGE", "LC_MESSAGES"} and not env & CATEGORY_VARS:
            env = set()
        if env & variables or any(f.startswith(LOCALE_DIRS) for f in mine.files):
            out.append(test)
    return out


def _can_compile(probe: Probe, base: str) -> bool:
    return (
        LOCALEDEF in probe.files
        and f"{DEFINITIONS}/{base}" in probe.files
        and any(p in probe.files for p in (f"{CHARMAPS}/UTF-8.gz", f"{CHARMAPS}/UTF-8"))
    )


class LocaleData(TargetData):
    base: str  # the locale's definition (en_US); the target's name is the locale (en_US.UTF-8)


def _targets(op: Operator, probe: Probe, touching: list[str], **data) -> list[Target]:
    if not touching:
        return []
    return [
        op.target(name=f"{base}.UTF-8", touching=touching, base=base, **data)
        for base in CANDIDATES
        if _can_compile(probe, base)
    ]


class _LocaleOperator(Operator):
    """Leaves an ENV naming the locale; the repair compiles it again from its definition."""

    Data = LocaleData
    offline = "Compile the locale {name} again from the definition the image ships (localedef -i {base} -f UTF-8)."

    def solution(self, target: Target) -> list[str]:
        return [f"localedef --replace -i {q(target.data.base)} -f UTF-8 {q(target.name)}"]


class CharsetData(LocaleData):
    # the tests that read locale variables, and the project text files each test opens
    # (prepare keeps the tests that matter and drops both)
    env_tests: list[str] = []
    texts: dict[str, list[str]] = {}


@register
class LocaleCharsetMislabeled(_LocaleOperator):
    """A hand-run ``localedef`` that compiled ``en_US.UTF-8`` with the ASCII character map
    (a wrong ``-f``), on a machine whose LANG names that locale."""

    name = "locale_charset_mislabeled"
    symptom = (
        "Reading or writing text with accented characters fails with UnicodeDecodeError or "
        "UnicodeEncodeError ('ascii' codec), although the environment says {name}."
    )
    hint = "the compiled locale behind {name} (its character set) that the environment selects"
    shows = (r"UnicodeDecodeError", r"UnicodeEncodeError", r"'ascii' codec")
    Data = CharsetData

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        if any(probe.env.get(v) for v in ("LC_ALL", "LC_CTYPE", "PYTHONUTF8", "PYTHONIOENCODING")):
            return []  # LANG would not decide the character set
        if not any(f"{CHARMAPS}/ANSI_X3.4-1968{ext}" in probe.files for ext in (".gz", "")):
            return []
        env_tests = _locale_tests(probe, tests, CTYPE_VARS, copies=True)
        texts = {t: sorted(_text_files(probe, t)) for t in tests}
        asking = set(env_tests)
        candidates = [t for t in tests if texts[t] or t in asking]
        return _targets(self, probe, candidates, env_tests=env_tests, texts={t: f for t, f in texts.items() if f})

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        """Keep the tests that read locale variables or open project text that is not ASCII."""
        touching = set(target.data.env_tests) | {
            test for test, files in target.data.texts.items()
            if any((content := gold.read(path)) and not content.isascii() for path in files)
        }
        if not touching:
            return None
        return target.with_data(env_tests=[], texts={}).model_copy(
            update={"touching": [t for t in target.touching if t in touching]}
        )

    def apply(self, target: Target) -> list[str]:
        base, name = target.data.base, target.name
        return [
            f"RUN localedef -c --replace -i {q(base)} -f ANSI_X3.4-1968 {q(name)} || [ $? -eq 1 ]",
            f"ENV LANG={name}",
        ]


def _text_files(probe: Probe, test: str) -> set[str]:
    """Project text files (not under a venv or the stdlib) the test opened."""
    workdir = project_root(probe)
    out = set()
    for path in own_touch(probe, test).files:
        if not path.startswith(workdir.rstrip("/") + "/") or "/site-packages/" in path:
            continue
        if path.lower().endswith(TEXT_SUFFIXES):
            entry = probe.files.get(path)
            if entry is not None and entry.type == "f" and 0 < entry.size <= 1024 * 1024:
                out.add(path)
    return out


_SWAP = r'''
import os, re, shutil, subprocess, sys, tempfile
base, name = {base!r}, {name!r}
with open("{definitions}/" + base, encoding="utf-8") as handle:
    text = handle.read()

def swap(match):
    body = match.group(0)
    point = re.search(r'^decimal_point\s+"([^"]*)"', body, re.M).group(1)
    sep = re.search(r'^thousands_sep\s+"([^"]*)"', body, re.M).group(1)
    body = re.sub(r'^(decimal_point\s+)"[^"]*"', lambda m: m.group(1) + '"' + sep + '"', body, flags=re.M)
    return re.sub(r'^(thousands_sep\s+)"[^"]*"', lambda m: m.group(1) + '"' + point + '"', body, flags=re.M)

swapped = re.sub(r'^LC_NUMERIC\s*$.*?^END LC_NUMERIC\s*$', swap, text, count=1, flags=re.M | re.S)
if swapped == text:
    sys.exit("no LC_NUMERIC section to change")
work = tempfile.mkdtemp()
try:
    path = os.path.join(work, base)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(swapped)
    code = subprocess.run(["localedef", "--replace", "-i", path, "-f", "UTF-8", name]).returncode
finally:
    shutil.rmtree(work)
sys.exit(code)
'''

_NUMERIC = re.compile(r"^LC_NUMERIC\s*$(.*?)^END LC_NUMERIC\s*$", re.MULTILINE | re.DOTALL)


@register
class LocaleSeparatorsSwapped(_LocaleOperator):
    """A customised locale definition (a site's own number format) compiled under a
    standard locale's name: its decimal point and thousands separator are swapped."""

    name = "locale_separators_swapped"
    symptom = (
        "Numbers formatted for the user's locale ({name}) come out as 1.234,50 instead of "
        "1,234.50, and the locale's decimal point is a comma."
    )
    hint = "the numeric conventions of the compiled locale {name} that the environment selects"
    shows = (r"\d\.\d{3},\d", r"decimal_point", r"thousands_sep", r"'\.' ?!?= ?','|',' ?!?= ?'\.'")

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        return _targets(self, probe, _locale_tests(probe, tests, NUMERIC_VARS))

    def prepare(self, target: Target, gold: GoldFiles) -> Target | None:
        raw = gold.read(f"{DEFINITIONS}/{target.data.base}")
        if raw is None:
            return None
        section = _NUMERIC.search(raw.decode("utf-8", "replace"))
        if section is None:
            return None
        point = re.search(r'^decimal_point\s+"([^"]*)"', section.group(1), re.MULTILINE)
        sep = re.search(r'^thousands_sep\s+"([^"]*)"', section.group(1), re.MULTILINE)
        if not point or not sep or not sep.group(1) or point.group(1) == sep.group(1):
            return None  # copied from elsewhere, or nothing to swap
        return target

    def apply(self, target: Target) -> list[str]:
        code = _SWAP.format(base=target.data.base, name=target.name, definitions=DEFINITIONS)
        return [run_python(code), f"ENV LC_ALL={target.name}"]


@register
class LocaleNotGenerated(_LocaleOperator):
    """An image that sets LANG to a standard locale but never generated it (the classic
    missing ``locale-gen`` step; removed here if it was there)."""

    name = "locale_not_generated"
    symptom = "locale.setlocale(locale.LC_ALL, '') raises locale.Error: unsupported locale setting."
    hint = "whether the locale {name} that the environment asks for is available on the system"
    shows = (r"unsupported locale setting", r"locale\.Error")

    def applies_to(self, probe: Probe, tests: list[str]) -> list[Target]:
        if probe.env.get("LC_ALL"):
            return []  # LANG would be overridden
        return _targets(self, probe, _locale_tests(probe, tests, LOCALE_VARS))

    def apply(self, target: Target) -> list[str]:
        base, name = target.data.base, target.name
        folded = f"{base}.utf8"
        return [
            (f"RUN if [ -s {ARCHIVE} ]; then localedef --delete-from-archive {q(folded)} {q(name)} 2>/dev/null"
            f" || true; fi && rm -rf /usr/lib/locale/{q(folded)} /usr/lib/locale/{q(name)}"),
            f"ENV LANG={name}",
        ]
