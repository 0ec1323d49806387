"""The export stage: Harbor and Terminal-Bench 1.0 task directories, and a JSONL dataset."""
