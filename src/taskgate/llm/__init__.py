"""Model-backed roles: the chat client for OpenAI-compatible endpoints, the embedded model, and
the LLM compiler, matcher and agent. Needs the ``openai`` package (a core dependency)."""
