"""The models on their own: Whisper's and Piper's real-time factors, the local LLM's first token and speed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from adapters.contract import CancelSignal, GenerateOptions, Message, TextDelta, Usage
from adapters.contract.speech_io import Transcriber
from adapters.llm.local import LocalLlamaAdapter
from adapters.tts.piper_voice import PiperSynthesizer
from audio.wav import load_wav
from desktop.assets import fixture
from engine.prompt import DEFAULT_SYSTEM_PROMPT

SPEECH_WAVS = ("tell_a_story.wav", "stop_what_time.wav", "whats_the_weather.wav", "tell_a_joke.wav",
               "what_is_two_plus_two.wav")  # fmt: skip
PARAGRAPH = (
    "The lighthouse keeper climbed the stairs every evening at dusk. "
    "From the top he could see the fishing boats coming home across the bay. "
    "On stormy nights he stayed awake until the last of them had reached the harbour. "
    "In the morning he wrote down the weather, the wind and the names of the boats."
)
QUESTIONS = (
    "Tell me a short story about a lighthouse.",
    "Why is the sky blue?",
    "How do I make a good cup of tea?",
    "What should I cook for dinner tonight?",
    "Give me one tip for sleeping better.",
)


@dataclass
class LlmTimes:
    ttft_ms: list[float] = field(default_factory=list)
    tokens_per_s: list[float] = field(default_factory=list)


async def asr_rtf(transcriber: Transcriber, reps: int, clips: int = len(SPEECH_WAVS)) -> list[float]:
    """Processing time / audio duration for each fixture utterance, `reps` times over."""
    audio = [load_wav(fixture(name)) for name in SPEECH_WAVS[:clips]]
    factors = []
    for _ in range(reps):
        for clip in audio:
            started = time.perf_counter()
            await transcriber.transcribe(clip, CancelSignal())
            factors.append(round((time.perf_counter() - started) / (len(clip) / 16000), 3))
    return factors


async def tts_rtf(synthesizer: PiperSynthesizer, reps: int, sentences: int = 4) -> list[float]:
    """Synthesis time / audio duration for each sentence of a paragraph, as Piper streams them."""
    text = " ".join(PARAGRAPH.split(". ")[:sentences])
    factors = []
    for _ in range(reps):
        started = time.perf_counter()
        async for segment in synthesizer.stream(text, CancelSignal()):
            now = time.perf_counter()
            factors.append(round((now - started) / (segment.duration_ms / 1000), 3))
            started = now
    return factors


async def llm_times(llm: LocalLlamaAdapter, reps: int, max_tokens: int) -> LlmTimes:
    """Time to first token and decode speed for a few questions under the default system prompt."""
    times = LlmTimes()
    for n in range(reps):
        question = QUESTIONS[n % len(QUESTIONS)]
        messages = (Message("system", DEFAULT_SYSTEM_PROMPT), Message("user", question))
        options = GenerateOptions(messages, max_tokens=max_tokens)
        started = time.perf_counter()
        first: float | None = None
        tokens = 0
        async for chunk in llm.stream(options, CancelSignal()):
            if isinstance(chunk, TextDelta) and first is None:
                first = time.perf_counter()
            elif isinstance(chunk, Usage):
                tokens = chunk.output_tokens
        ended = time.perf_counter()
        if first is not None:
            times.ttft_ms.append(round((first - started) * 1000, 1))
            if tokens > 1 and ended > first:
                times.tokens_per_s.append(round((tokens - 1) / (ended - first), 1))
    return times
