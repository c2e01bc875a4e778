"""Build the real parts from the configuration - the language model, the speech models, the tools - for the
window, `parley run`, the bench and the self-test alike; every missing piece is a one-line `BadInput`."""

from __future__ import annotations

from pathlib import Path

from adapters.asr.whisper import WhisperTranscriber
from adapters.llm.secret import Secret
from adapters.runtime.model_files import ModelError
from adapters.tts.piper_voice import PiperSynthesizer
from desktop.builtin_tools import current_time_tool, take_note_tool
from desktop.config import Config, data_dir
from desktop.errors import BadInput
from desktop.languages import asr_language
from desktop.providers.table import LlmChoice, choose
from engine.prompt import HistoryPrompt
from engine.tools import ToolRegistry

__all__ = ["LlmChoice", "builtin_tools", "llm_choice", "prompt_for", "speech_models"]


def llm_choice(config: Config, key: Secret | None) -> LlmChoice:
    """The configured LLM, built by its provider's entry (desktop.providers); the key only ever goes to the adapter
    (and the journal's redactor)."""
    return choose(config.llm, key)


def speech_models(config: Config) -> tuple[WhisperTranscriber, PiperSynthesizer]:
    try:
        language = asr_language(config.speech.language)
        transcriber = WhisperTranscriber(config.speech.asr_model_path or None, language=language)
        synthesizer = PiperSynthesizer(config.speech.voice_path or None)
    except ModelError as error:
        raise BadInput(str(error)) from None
    return transcriber, synthesizer


def prompt_for(config: Config) -> HistoryPrompt:
    """The system prompt in the configured language (engine.prompt_languages)."""
    return HistoryPrompt(language=config.speech.language)


def builtin_tools(notes_file: Path | None = None) -> ToolRegistry:
    return ToolRegistry([current_time_tool(), take_note_tool(notes_file or data_dir() / "notes.txt")])
