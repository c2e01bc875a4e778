"""How fast a model is on this computer, measured in about five seconds right after it is downloaded: a language
model's first token and tokens per second, Whisper's and Piper's real-time factor (seconds of work per second of
speech). The model is loaded for the probe and released after it."""

from __future__ import annotations

import time
from contextlib import aclosing
from pathlib import Path
from typing import TYPE_CHECKING

from adapters.contract import CancelSignal, GenerateOptions, Message, TextDelta, Usage
from desktop.assets import fixture
from desktop.catalog.entries import Entry

if TYPE_CHECKING:
    from adapters.llm.local import LocalLlamaAdapter

PROBE_S = 5.0  # the longest the probe generates or speaks for
QUESTION = "In two sentences, what is a good way to start the day?"
SENTENCES = ("The lighthouse keeper climbed the stairs every evening at dusk.",
             "From the top he could see the fishing boats coming home across the bay.")  # fmt: skip
CLIP = "what_is_two_plus_two.wav"


async def probe(entry: Entry, path: Path) -> dict[str, float]:
    """The speed of the model at `path` (blocking work in workers; a ModelError if it will not load)."""
    if entry.kind == "llm":
        return await _llm(path)
    if entry.kind == "asr":
        return await _asr(path, entry.multilingual)
    return await _voice(path)


def summary(entry: Entry, measured: dict[str, float]) -> str:
    """The probe's result in a few words, for `parley models` and the Models dialog."""
    if entry.kind == "llm" and "tokens_per_s" in measured:
        return f"{measured['tokens_per_s']:.0f} tokens/s, first token in {measured['first_token_ms']:.0f} ms"
    if "rtf" in measured:
        return f"{measured['rtf']:.2f} x real time ({1 / max(measured['rtf'], 1e-3):.0f} times faster than speech)"
    return "not measured"


async def _llm(path: Path) -> dict[str, float]:
    from adapters.llm.local import LocalLlamaAdapter

    llm = LocalLlamaAdapter(path, max_tokens=256)
    await llm.load()
    try:
        return await _generate(llm)
    finally:
        await llm.release()


async def _generate(llm: LocalLlamaAdapter) -> dict[str, float]:
    options = GenerateOptions((Message("user", QUESTION),), max_tokens=256)
    started = time.perf_counter()
    first, tokens, counted = 0.0, 0, 0
    async with aclosing(llm.stream(options, CancelSignal())) as stream:
        async for chunk in stream:
            if isinstance(chunk, TextDelta):
                first = first or time.perf_counter()
                counted += 1
            elif isinstance(chunk, Usage):
                tokens = chunk.output_tokens
            if time.perf_counter() - started > PROBE_S:
                break  # closing the stream stops the generation within a token
    ended = time.perf_counter()
    tokens = tokens or counted
    if not first:
        return {}
    speed = (tokens - 1) / (ended - first) if tokens > 1 and ended > first else 0.0
    return {"first_token_ms": round((first - started) * 1000, 1), "tokens_per_s": round(speed, 1)}


async def _asr(path: Path, multilingual: bool) -> dict[str, float]:
    from adapters.asr.whisper import WhisperTranscriber
    from audio.wav import load_wav

    transcriber = WhisperTranscriber(path, language="en" if multilingual else None)
    clip = load_wav(fixture(CLIP))
    await transcriber.preload(CancelSignal())
    try:
        started = time.perf_counter()
        await transcriber.transcribe(clip, CancelSignal())
        return {"rtf": round((time.perf_counter() - started) / (len(clip) / 16000), 3)}
    finally:
        await transcriber.release()


async def _voice(path: Path) -> dict[str, float]:
    from adapters.tts.piper_voice import PiperSynthesizer

    synthesizer = PiperSynthesizer(path)
    await synthesizer.preload(CancelSignal())
    try:
        started, spoken = time.perf_counter(), 0.0
        async with aclosing(synthesizer.stream(" ".join(SENTENCES), CancelSignal())) as segments:
            async for segment in segments:
                spoken += segment.duration_ms / 1000
                if time.perf_counter() - started > PROBE_S:
                    break
        return {"rtf": round((time.perf_counter() - started) / spoken, 3)} if spoken else {}
    finally:
        await synthesizer.release()
