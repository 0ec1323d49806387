"""The curate stage: successful, honest repair rollouts become an SFT set (OpenAI chat JSONL)."""
