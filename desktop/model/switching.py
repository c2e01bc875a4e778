"""Switching models between turns: whether two engines run the same language model, handing the old one's memory
back, and the names of the models that speak, for the journal (`session/start`, `settings/changed`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from desktop.config import Config
from desktop.pipeline.parts import LlmChoice

BUNDLED = {"llm": "SmolLM2-135M-Instruct (bundled)", "asr": "whisper tiny.en (bundled)",
           "tts": "en_US-joe-medium (bundled)"}  # fmt: skip


def same_model(old: LlmChoice, new: LlmChoice | None) -> bool:
    """The same adapter, or the same provider and model (then the loaded model is kept for the next engine)."""
    if new is None:
        return False
    if new.adapter is old.adapter:
        return True
    return (old.adapter.provider, old.adapter.model) == (new.adapter.provider, new.adapter.model)


async def release_llm(choice: LlmChoice) -> None:
    """Hand the model's memory back, for adapters that hold one (the embedded llama.cpp); a no-op for others."""
    release: Callable[[], Awaitable[None]] | None = getattr(choice.adapter, "release", None)
    if release is not None:
        await release()


def spoken_models(config: Config) -> dict[str, str]:
    """Which models think, listen and speak, by name (no path: it may hold the person's name, and no URL)."""
    llm = config.llm
    if llm.provider == "local":
        thinks = Path(llm.local_model_path).stem if llm.local_model_path else BUNDLED["llm"]
    else:
        thinks = f"{llm.model} ({llm.provider})"
    speech = config.speech
    return {
        "llm": thinks,
        "asr": Path(speech.asr_model_path).name if speech.asr_model_path else BUNDLED["asr"],
        "tts": Path(speech.voice_path).stem if speech.voice_path else BUNDLED["tts"],
    }
