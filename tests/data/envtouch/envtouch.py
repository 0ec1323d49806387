"""envtouch: small helpers that lean on the system environment.

Time zones, the local zone, the trust store, the user's locale, text files in the
default encoding, media types and the OS release. Imports of the stdlib areas are kept
inside the functions, so a command that needs none of them starts fast.
"""

from __future__ import annotations

import os
import re
import sys

__version__ = "0.1.0"

LOCALE_VARIABLES = ("LC_ALL", "LC_NUMERIC", "LC_CTYPE", "LANG")


# ---- plain helpers --------------------------------------------------------------------


def slugify(text: str) -> str:
    """Lower-case ASCII words joined by dashes."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)


def chunks(items: list, size: int) -> list[list]:
    if size < 1:
        raise ValueError("size must be at least 1")
    return [items[i : i + size] for i in range(0, len(items), size)]


# ---- time zones ----------------------------------------------------------------------


def zone(name: str):
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def to_zone(moment, name: str):
    """``moment`` (an aware datetime) as wall-clock time in zone ``name``."""
    return moment.astimezone(zone(name))


def local_zone_name() -> str:
    """The configured local zone, as tzlocal resolves it: $TZ, /etc/timezone, /etc/localtime."""
    value = os.environ.get("TZ")
    if value:
        return value.lstrip(":")
    try:
        with open("/etc/timezone", encoding="utf-8") as handle:
            name = handle.read().strip()
        if name:
            return name
    except OSError:
        pass
    target = os.path.realpath("/etc/localtime")
    if "/zoneinfo/" in target:
        return target.split("/zoneinfo/", 1)[1]
    return "UTC"


def local_zone():
    return zone(local_zone_name())


def system_zone():
    """The zone the C library uses for local time (the file /etc/localtime)."""
    from zoneinfo import ZoneInfo

    with open("/etc/localtime", "rb") as handle:
        return ZoneInfo.from_file(handle, key="localtime")


# ---- certificates --------------------------------------------------------------------


def trust_store(cafile: str | None = None):
    """A client SSL context trusting the system store (or ``cafile``)."""
    import ssl

    return ssl.create_default_context(cafile=cafile)


def bundle_subjects(path: str) -> list[str]:
    """The common names of the certificates in a PEM bundle, in order."""
    import ssl

    context = ssl.create_default_context(cafile=path)
    names = []
    for cert in context.get_ca_certs():
        for rdn in cert.get("subject", ()):
            for key, value in rdn:
                if key in ("commonName", "organizationName"):
                    names.append(value)
    return names


def certifi_bundle() -> str:
    import certifi

    return certifi.where()


# ---- locale --------------------------------------------------------------------------


def requested_locale(category: str = "LC_NUMERIC") -> str:
    """The locale the environment asks for, in POSIX precedence (LC_ALL, the category, LANG)."""
    for variable in ("LC_ALL", category, "LANG"):
        value = os.environ.get(variable)
        if value:
            return value
    return "C"


def use_user_locale() -> str:
    """Switch every category to the environment's locale; returns the numeric locale's name."""
    import locale

    locale.setlocale(locale.LC_ALL, "")
    return locale.setlocale(locale.LC_NUMERIC, requested_locale("LC_NUMERIC"))


def format_amount(value: float) -> str:
    import locale

    use_user_locale()
    return locale.format_string("%.2f", value, grouping=True)


def parse_amount(text: str) -> float:
    import locale

    use_user_locale()
    return locale.atof(text)


# ---- text files ----------------------------------------------------------------------


def read_note(path) -> str:
    """A text file in the default encoding (as most scripts open files)."""
    with open(path) as handle:
        return handle.read()


def save_note(path, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def default_encoding() -> str:
    import codecs
    import locale

    return codecs.lookup(locale.getpreferredencoding(False)).name


# ---- media types and the OS ----------------------------------------------------------


def content_type(filename: str) -> str:
    import mimetypes

    kind, encoding = mimetypes.guess_type(filename)
    if kind is None:
        return "application/octet-stream"
    return kind + ("; encoding=" + encoding if encoding else "")


def user_agent() -> str:
    import platform

    info = platform.freedesktop_os_release()
    return f"envtouch/{__version__} ({info['PRETTY_NAME']}; {info['ID']} {info['VERSION_ID']})"


# ---- the command ---------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: envtouch (--version | slug TEXT... | type FILE... | zone NAME)")
        return 0
    command, rest = args[0], args[1:]
    if command == "--version":
        print(__version__)
    elif command == "slug":
        print(slugify(" ".join(rest)))
    elif command == "type":
        for name in rest:
            print(f"{name}\t{content_type(name)}")
    elif command == "zone":
        from datetime import datetime, timezone

        now = datetime(2024, 7, 1, 12, 0, tzinfo=timezone.utc)
        for name in rest:
            print(f"{name}\t{to_zone(now, name).isoformat()}")
    else:
        print(f"envtouch: unknown command {command!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
