"""The validate stage: exported tasks run as oracle (reward 1) and as nop (reward 0)."""
