"""LLM agents: a model client over any OpenAI-compatible endpoint, the tools and the loop."""
