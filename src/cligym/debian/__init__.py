"""Debian source packages as gold environments (docs/debian.md): the host side of the
archive, the tests a source package declares, and the candidates worth building."""
