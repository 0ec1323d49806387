"""Rollouts: agents attempt exported tasks; each attempt leaves an ATIF trajectory and a result."""
