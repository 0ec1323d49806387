"""The verify stage: a candidate becomes a task only if it is reproducible, solvable,
non-trivial and leak-free."""
