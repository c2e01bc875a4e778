"""Whether the configured server on this computer is there and offers the configured model, in one line
(`parley doctor` and Settings' Test connection)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop.providers.listing import NotListed, list_models
from desktop.providers.table import Provider, base_url_for, provider_named

if TYPE_CHECKING:
    from desktop.config import LlmConfig


def offers(model: str, models: tuple[str, ...]) -> bool:
    """Ollama answers to a name without a tag as to its `:latest`."""
    return model in models or f"{model}:latest" in models


def check_server(llm: LlmConfig) -> tuple[bool, str]:
    """(ok, words) for a provider that is a server on this computer."""
    provider = provider_named(llm.provider)
    assert provider is not None, llm.provider
    url = base_url_for(llm)
    try:
        models = list_models(provider, url, connect_s=llm.connect_timeout)
    except NotListed as error:
        return False, f"{error}; {provider.hint}"
    name = f"{_short(provider)} at {url}"
    if not models:
        return False, f"{name} has no models; {provider.hint}"
    if not provider.names_model:
        return True, f"{name} serves {models[0]}"
    if offers(llm.model, models):
        return True, f"{name} offers {llm.model}"
    shown = ", ".join(models[:8]) + (", …" if len(models) > 8 else "")
    return False, f"{name} has no model {llm.model!r}; pick one of {shown} (Settings, or --llm-model NAME)"


def _short(provider: Provider) -> str:
    return provider.label.split(" (")[0]
