"""Build the language model the settings ask for; a missing model is a Problem, not a crash."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from adapters.contract import LlmAdapter
from adapters.llm.models import ModelError
from desktop.app.facts import Problem
from desktop.app.keyring_store import StoredKey
from desktop.app.wording import missing_model
from desktop.config import Config


class BackendUnavailable(Exception):
    """No language model can be set up; `problem` says why and how to fix it."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass(frozen=True)
class LlmChoice:
    adapter: LlmAdapter
    label: str
    load: Callable[[], Awaitable[None]] | None = None  # a model to load in the background first


def choose_llm(config: Config, key: StoredKey | None) -> LlmChoice:
    if config.llm.provider == "local":
        return _embedded(config)
    from adapters.llm.openai_compat import OpenAICompatAdapter

    adapter = OpenAICompatAdapter(
        config.llm.base_url,
        config.llm.model,
        key.secret if key else None,
        connect_timeout=config.llm.connect_timeout,
        idle_timeout=config.llm.idle_timeout,
        max_tokens=config.llm.max_tokens,
    )
    return LlmChoice(adapter, f"{config.llm.model} at {_host(config.llm.base_url)}")


def _host(url: str) -> str:
    """Where the provider is, for a label: host and port only (the URL's user info may hold a password)."""
    try:
        return urlsplit(url).netloc.rpartition("@")[2] or "?"
    except ValueError:
        return "?"


def _embedded(config: Config) -> LlmChoice:
    try:
        from adapters.llm.local import LocalLlamaAdapter

        path = Path(config.llm.local_model_path) if config.llm.local_model_path else None
        adapter = LocalLlamaAdapter(path, max_tokens=config.llm.max_tokens)
    except ModelError as error:
        raise BackendUnavailable(missing_model(str(error))) from None
    except ImportError as error:
        raise BackendUnavailable(missing_model(f"llama-cpp-python cannot be imported ({error})")) from None
    return LlmChoice(adapter, f"{adapter.model} (embedded, offline)", adapter.load)
