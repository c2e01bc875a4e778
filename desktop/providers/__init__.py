"""The language-model providers Parley can talk to, in one table (desktop.providers.table): the config, the CLI,
`parley doctor` and the Settings dialog all read it, so a new provider is one entry."""

from desktop.providers.table import (
    OPENAI_BASE_URL,
    PROVIDERS,
    LlmChoice,
    Provider,
    base_url_for,
    provider_named,
    provider_names,
)

__all__ = [
    "OPENAI_BASE_URL",
    "PROVIDERS",
    "LlmChoice",
    "Provider",
    "base_url_for",
    "provider_named",
    "provider_names",
]
