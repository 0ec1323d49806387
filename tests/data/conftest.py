"""Fixture projects live here; their own tests run inside gold images, never on the host."""

collect_ignore_glob = ["*"]
