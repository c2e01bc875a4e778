"""The speech adapters (real and fake) the ASR and TTS conformance suites run against.

Every harness supports every case, so the suites are parametrised over all of them with no skips.
Real audio for Whisper is made by Piper in-process (no WAV fixtures); models load once per process.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np

from adapters.asr.whisper import WhisperTranscriber
from adapters.contract.cancel import CancelSignal, User
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples, Synthesizer, Transcriber
from adapters.runtime.pcm import resample
from adapters.runtime.workers import StopFlag
from adapters.testing_speech import FakeSynthesizer, FakeTranscriber
from adapters.tts.piper_voice import PiperSynthesizer, default_voice_path, shared_voice
from adapters.tts.render import render

SPEECH = "The quick brown fox jumps over the lazy dog near the river bank."
RELEASE_BOUND_S = 10.0


@dataclass
class AsrHarness:
    name: str
    transcriber: WhisperTranscriber | FakeTranscriber
    speech: Callable[[], Samples]  # a few seconds of SPEECH at 16 kHz
    step_bound_s: float  # longest time one decoding step may take on a busy 2-core machine

    def segments(self) -> int:
        return self.transcriber.segments_decoded

    def busy(self) -> int:
        return self.transcriber.busy


@dataclass
class TtsHarness:
    name: str
    synthesizer: PiperSynthesizer | FakeSynthesizer
    step_bound_s: float

    def busy(self) -> int:
        return self.synthesizer.busy


@functools.cache
def piper_speech_16k(text: str = SPEECH) -> Samples:
    """`text` spoken by the default Piper voice, resampled to 16 kHz float32 (made in-process, blocking)."""
    segment = render(shared_voice(default_voice_path()), 0, text, StopFlag())
    assert segment is not None
    audio = segment.audio.astype(np.float32) / 32768.0
    return resample(audio, segment.sample_rate, ASR_SAMPLE_RATE)


def tone_speech() -> Samples:
    """Loud enough for the fake to hear, framed by silence."""
    t = np.arange(2 * ASR_SAMPLE_RATE) / ASR_SAMPLE_RATE
    tone = (0.3 * np.sin(2 * np.pi * 300 * t)).astype(np.float32)
    quiet = np.zeros(ASR_SAMPLE_RATE // 4, dtype=np.float32)
    return np.concatenate([quiet, tone, quiet])


ASR_HARNESSES: dict[str, Callable[[], AsrHarness]] = {
    "whisper": lambda: AsrHarness("whisper", WhisperTranscriber(), piper_speech_16k, step_bound_s=15.0),
    "fake": lambda: AsrHarness("fake", FakeTranscriber(step_s=0.05), tone_speech, step_bound_s=1.0),
}

TTS_HARNESSES: dict[str, Callable[[], TtsHarness]] = {
    "piper": lambda: TtsHarness("piper", PiperSynthesizer(), step_bound_s=15.0),
    "fake": lambda: TtsHarness("fake", FakeSynthesizer(step_s=0.05), step_bound_s=1.0),
}


async def until(condition: Callable[[], bool], bound_s: float = RELEASE_BOUND_S) -> bool:
    """Poll `condition` every 5 ms until it holds or `bound_s` passes (bounded, no hoping sleeps)."""
    deadline = time.monotonic() + bound_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


async def check_stopped_midway(
    call: Callable[[CancelSignal], Awaitable[object]], busy: Callable[[], int], *, by_signal: bool
) -> None:
    """A call stopped while its worker thread runs (by its signal, or by cancelling its task) ends cancelled, and
    only once that thread has returned."""
    signal = CancelSignal()
    task = asyncio.ensure_future(call(signal))
    assert await until(lambda: busy() > 0 or task.done(), bound_s=10.0)
    if by_signal:
        signal.set(User())
    else:
        task.cancel()
    await asyncio.wait({task})
    assert task.cancelled()
    assert busy() == 0


def python_threads() -> int:
    return threading.active_count()


def as_transcriber(harness: AsrHarness) -> Transcriber:
    return harness.transcriber


def as_synthesizer(harness: TtsHarness) -> Synthesizer:
    return harness.synthesizer
