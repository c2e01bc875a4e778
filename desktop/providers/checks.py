"""Whether the configured server on this computer is there and offers the configured model, and what a remote
provider's answer means, in one line (`parley doctor` and Settings' Test connection)."""

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


def answered(status: int, tried: str, shown: str, *, key_sent: bool) -> tuple[bool, str]:
    """(ok, words) for the status the models endpoint `tried` gave: only a success or a rate limit passes."""
    if status in (401, 403):
        return False, f"{shown} answered, but refused the API key (HTTP {status})"
    if status == 429:
        return True, f"{shown} answered, but asks to slow down (HTTP 429); try again in a moment"
    if status == 404:
        return False, f"nothing answers at {tried} (HTTP 404): check the server address"
    if 300 <= status < 400:
        return False, f"{tried} sends Parley elsewhere (HTTP {status}): check the server address"
    if 400 <= status < 500:
        return False, f"{tried} refused the request (HTTP {status}): check the server address"
    if status >= 500:
        return False, f"{shown} answered with a server error (HTTP {status})"
    return True, f"{shown} answered (HTTP {status})" + ("" if key_sent else "; no API key was sent")
