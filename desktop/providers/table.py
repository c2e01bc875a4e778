"""The provider table: every way Parley reaches a language model, with how it is built, which settings it reads,
where it listens and how its models are listed. The config validates names against it, the CLI offers them,
`parley doctor` checks them and the Settings dialog lists them; a new provider is one entry here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from adapters.contract import LlmAdapter
from adapters.llm.secret import Secret
from adapters.runtime.model_files import ModelError
from desktop.errors import BadInput

if TYPE_CHECKING:
    from desktop.config import LlmConfig

OPENAI_BASE_URL = "https://api.openai.com/v1"  # the [llm] base_url default: "not set" for a server on this machine
Listing = Literal["", "openai", "ollama"]  # GET {base}/models, or GET {root}/api/tags; "" for the embedded model


@dataclass(frozen=True)
class LlmChoice:
    """The configured language model, how to name it, and a model to load in the background first (if any)."""

    adapter: LlmAdapter
    label: str
    load: Callable[[], Awaitable[None]] | None = None


@dataclass(frozen=True)
class Provider:
    """One way to reach a language model."""

    name: str  # what [llm] provider and --llm call it
    label: str  # what the Settings dialog shows
    make: Callable[[Provider, LlmConfig, Secret | None], LlmChoice]
    settings: tuple[str, ...]  # the [llm] keys it reads (the dialog enables their fields)
    base_url: str = ""  # where it listens unless [llm] base_url says otherwise ("": in-process)
    listing: Listing = ""
    sends_key: bool = False  # a server on this machine never gets the API key meant for a cloud provider
    local_server: bool = False  # a server on 127.0.0.1 that `parley doctor` and Settings look for
    names_model: bool = True  # the request's model name picks the model (llama.cpp's server has just one)
    hint: str = ""  # how to get it running, for one-line messages

    @property
    def over_http(self) -> bool:
        return bool(self.listing)


def _embedded(provider: Provider, llm: LlmConfig, key: Secret | None) -> LlmChoice:
    try:
        from adapters.llm.local import LocalLlamaAdapter

        path = Path(llm.local_model_path) if llm.local_model_path else None
        local = LocalLlamaAdapter(path, max_tokens=llm.max_tokens)
    except ModelError as error:
        raise BadInput(str(error)) from None
    except ImportError as error:
        raise BadInput(f"llama-cpp-python cannot be imported ({error}); reinstall Parley") from None
    return LlmChoice(local, f"{local.model} (embedded, offline)", local.load)


def _openai_wire(provider: Provider, llm: LlmConfig, key: Secret | None) -> LlmChoice:
    from adapters.llm.openai_compat import OpenAICompatAdapter

    url = base_url_for(llm)
    adapter = OpenAICompatAdapter(
        url,
        llm.model,
        key if provider.sends_key else None,
        connect_timeout=llm.connect_timeout,
        idle_timeout=llm.idle_timeout,
        provider=provider.name,
        max_tokens=llm.max_tokens,
    )
    where = _host(url) if provider.name == "openai" else f"{provider.label.split(' (')[0]}, {_host(url)}"
    return LlmChoice(adapter, f"{llm.model} at {where}")


def _host(url: str) -> str:
    """Where the provider is, for a label: host and port only (the URL's user info may hold a password)."""
    try:
        return urlsplit(url).netloc.rpartition("@")[2] or "?"
    except ValueError:
        return "?"


REMOTE_SETTINGS = ("base_url", "model", "api_key")
SERVER_SETTINGS = ("base_url", "model")
PROVIDERS: tuple[Provider, ...] = (
    Provider("local", "Embedded (offline, llama.cpp)", _embedded, ("local_model_path",)),
    Provider("openai", "OpenAI-compatible server", _openai_wire, REMOTE_SETTINGS, OPENAI_BASE_URL, "openai",
             sends_key=True, hint="set the server address, the model and an API key"),
    Provider("ollama", "Ollama (on this computer)", _openai_wire, SERVER_SETTINGS, "http://127.0.0.1:11434/v1",
             "ollama", local_server=True, hint="start it with `ollama serve` and pull a model (`ollama pull NAME`)"),
    Provider("lmstudio", "LM Studio (on this computer)", _openai_wire, SERVER_SETTINGS, "http://127.0.0.1:1234/v1",
             "openai", local_server=True, hint="start LM Studio's server (Developer tab) and load a model"),
    Provider("llamacpp", "llama.cpp server (on this computer)", _openai_wire, SERVER_SETTINGS,
             "http://127.0.0.1:8080/v1", "openai", local_server=True, names_model=False,
             hint="start it with `llama-server -m MODEL.gguf`"),
)  # fmt: skip


def provider_names() -> tuple[str, ...]:
    return tuple(p.name for p in PROVIDERS)


def provider_named(name: str) -> Provider | None:
    return next((p for p in PROVIDERS if p.name == name), None)


def base_url_for(llm: LlmConfig) -> str:
    """The URL the provider is reached at: [llm] base_url, unless it is left at the OpenAI default (or empty) for a
    provider that listens elsewhere by default (a `provider = "ollama"` line alone is enough)."""
    provider = provider_named(llm.provider)
    if provider is None or (llm.base_url and llm.base_url != OPENAI_BASE_URL):
        return llm.base_url
    return provider.base_url or llm.base_url


def choose(llm: LlmConfig, key: Secret | None) -> LlmChoice:
    """The configured language model (a one-line BadInput when it cannot be built)."""
    provider = provider_named(llm.provider)
    if provider is None:
        raise BadInput(f"llm provider {llm.provider!r} is unknown; use one of {', '.join(provider_names())}")
    return provider.make(provider, llm, key)
