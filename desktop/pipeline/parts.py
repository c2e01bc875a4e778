"""Build the real parts from the configuration - the language model, the speech models, the tools - for the
window, `parley run`, the bench and the self-test alike; every missing piece is a one-line `BadInput`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from adapters.asr.whisper import WhisperTranscriber
from adapters.contract import LlmAdapter
from adapters.llm.models import ModelError
from adapters.llm.secret import Secret
from adapters.tts.piper_voice import PiperSynthesizer
from desktop.builtin_tools import current_time_tool, take_note_tool
from desktop.config import Config, data_dir
from desktop.errors import BadInput
from engine.tools import ToolRegistry


@dataclass(frozen=True)
class LlmChoice:
    """The configured language model, how to name it, and a model to load in the background first (if any)."""

    adapter: LlmAdapter
    label: str
    load: Callable[[], Awaitable[None]] | None = None


def llm_choice(config: Config, key: Secret | None) -> LlmChoice:
    """The configured LLM; the key only ever goes to the adapter (and the journal's redactor)."""
    llm = config.llm
    if llm.provider == "openai":
        from adapters.llm.openai_compat import OpenAICompatAdapter

        adapter = OpenAICompatAdapter(
            llm.base_url,
            llm.model,
            key,
            connect_timeout=llm.connect_timeout,
            idle_timeout=llm.idle_timeout,
            max_tokens=llm.max_tokens,
        )
        return LlmChoice(adapter, f"{llm.model} at {_host(llm.base_url)}")
    return _embedded(config)


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
        local = LocalLlamaAdapter(path, max_tokens=config.llm.max_tokens)
    except ModelError as error:
        raise BadInput(str(error)) from None
    except ImportError as error:
        raise BadInput(f"llama-cpp-python cannot be imported ({error}); reinstall Parley") from None
    return LlmChoice(local, f"{local.model} (embedded, offline)", local.load)


def speech_models(config: Config) -> tuple[WhisperTranscriber, PiperSynthesizer]:
    try:
        transcriber = WhisperTranscriber(config.speech.asr_model_path or None)
        synthesizer = PiperSynthesizer(config.speech.voice_path or None)
    except ModelError as error:
        raise BadInput(str(error)) from None
    return transcriber, synthesizer


def builtin_tools(notes_file: Path | None = None) -> ToolRegistry:
    return ToolRegistry([current_time_tool(), take_note_tool(notes_file or data_dir() / "notes.txt")])
