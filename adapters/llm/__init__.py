"""LLM provider adapters; import the concrete module you need (the engine only sees adapters.contract)."""
