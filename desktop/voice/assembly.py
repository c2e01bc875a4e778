"""Build the real parts from the configuration; every missing piece is a one-line `BadInput`."""

from __future__ import annotations

from pathlib import Path

from adapters.asr.whisper import WhisperTranscriber
from adapters.contract import LlmAdapter
from adapters.llm.local import LocalLlamaAdapter
from adapters.llm.models import ModelError
from adapters.llm.openai_compat import OpenAICompatAdapter
from adapters.llm.secret import Secret, load_api_key
from adapters.tts.piper_voice import PiperSynthesizer
from desktop.builtin_tools import current_time_tool, take_note_tool
from desktop.config import Config, data_dir
from engine.tools import ToolRegistry


class BadInput(Exception):
    """The user's input, configuration or environment is wrong; the message says how to fix it."""


def llm_adapter(config: Config) -> tuple[LlmAdapter, Secret | None]:
    """The configured LLM and its key (the key only ever goes to the adapter and the journal's redactor)."""
    llm = config.llm
    if llm.provider == "openai":
        key = load_api_key()
        adapter = OpenAICompatAdapter(
            llm.base_url,
            llm.model,
            key,
            connect_timeout=llm.connect_timeout,
            idle_timeout=llm.idle_timeout,
            max_tokens=llm.max_tokens,
        )
        return adapter, key
    try:
        path = Path(llm.local_model_path) if llm.local_model_path else None
        return LocalLlamaAdapter(path, max_tokens=llm.max_tokens), None
    except ModelError as error:
        raise BadInput(str(error)) from None


def speech_models(config: Config) -> tuple[WhisperTranscriber, PiperSynthesizer]:
    try:
        transcriber = WhisperTranscriber(config.speech.asr_model_path or None)
        synthesizer = PiperSynthesizer(config.speech.voice_path or None)
    except ModelError as error:
        raise BadInput(str(error)) from None
    return transcriber, synthesizer


def builtin_tools(notes_file: Path | None = None) -> ToolRegistry:
    return ToolRegistry([current_time_tool(), take_note_tool(notes_file or data_dir() / "notes.txt")])
