"""First-class fakes of the speech contract: same segmentation, threads and cancellation as the real adapters.

They run in a worker thread in small blocking steps (one per segment), so tests of the pipeline see
the same quiescence behaviour as with Whisper and Piper, in milliseconds and without models.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import AsyncGenerator

import numpy as np

from adapters.asr import guard
from adapters.contract.cancel import CancelSignal, stopped
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples, SpeechText, SynthSegment, Transcript, Word, WordTiming
from adapters.runtime.pcm import resample, to_mono_float32
from adapters.runtime.workers import Worker
from adapters.tts.segments import source_slices
from adapters.tts.speakable import to_speakable

FAKE_WORKER = Worker("parley-fake-speech")
LOUD_DBFS = -40.0  # what the fake transcriber counts as speech


class FakeTranscriber:
    """Hears `text` in any audio louder than -40 dBFS, spread evenly over the loud part; silence gives no words."""

    def __init__(
        self, text: str = "hello there how are you", *, words_per_segment: int = 2, step_s: float = 0.005
    ) -> None:
        self._words = text.split()
        self._per_segment = max(1, words_per_segment)
        self._step_s = step_s
        self.calls: list[float] = []  # duration of each transcribed input, seconds
        self.segments_decoded = 0

    @property
    def sample_rate(self) -> int:
        return ASR_SAMPLE_RATE

    @property
    def busy(self) -> int:
        return FAKE_WORKER.active

    async def transcribe(
        self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE
    ) -> Transcript:
        if signal.cancelled:
            await stopped()
        audio = resample(to_mono_float32(samples), sample_rate, ASR_SAMPLE_RATE)
        self.calls.append(len(audio) / ASR_SAMPLE_RATE)
        words = await FAKE_WORKER.run(functools.partial(self._decode, audio), signal)
        if words is None:
            await stopped()
        return Transcript(
            " ".join(w.text for w in words), words, 0.0 if words else 1.0, "en", len(audio) / ASR_SAMPLE_RATE
        )

    def _decode(self, audio: Samples, stop: threading.Event) -> tuple[Word, ...] | None:
        """One blocking step per segment of `words_per_segment` words, checking `stop` after each."""
        span = _loud_span(audio)
        if span is None or not self._words:
            return ()
        start, end = span
        step = (end - start) / len(self._words)
        words: list[Word] = []
        for first in range(0, len(self._words), self._per_segment):
            for n in range(first, min(first + self._per_segment, len(self._words))):
                words.append(Word(self._words[n], start + n * step, start + (n + 1) * step, 0.9))
            self.segments_decoded += 1
            if stop.wait(self._step_s):
                return None
        return tuple(words)


def _loud_span(audio: Samples, frame: int = 320) -> tuple[float, float] | None:
    """First and last 20 ms frame above LOUD_DBFS, in seconds."""
    loud = [i for i in range(0, len(audio), frame) if guard.dbfs(audio[i : i + frame]) > LOUD_DBFS]
    if not loud:
        return None
    return loud[0] / ASR_SAMPLE_RATE, min(loud[-1] + frame, len(audio)) / ASR_SAMPLE_RATE


class FakeSynthesizer:
    """Speaks each word as a tone of `ms_per_char` per character with `gap_ms` between words; timings are exact."""

    def __init__(
        self, *, sample_rate: int = 16_000, ms_per_char: float = 40.0, gap_ms: float = 60.0, step_s: float = 0.005
    ) -> None:
        self._rate = sample_rate
        self._ms_per_char = ms_per_char
        self._gap_ms = gap_ms
        self._step_s = step_s
        self.spoken: list[str] = []  # the speakable text of every segment rendered

    @property
    def sample_rate(self) -> int:
        return self._rate

    @property
    def busy(self) -> int:
        return FAKE_WORKER.active

    async def stream(self, text: SpeechText, signal: CancelSignal) -> AsyncGenerator[SynthSegment, None]:
        index = 0
        async for source in source_slices(text):
            if signal.cancelled:
                return
            segment = await FAKE_WORKER.run(functools.partial(self._render, index, source), signal)
            if segment is None:
                return
            yield segment
            index += 1

    def _render(self, index: int, source: str, stop: threading.Event) -> SynthSegment | None:
        speakable = to_speakable(source)
        self.spoken.append(speakable.spoken)
        parts: list[np.ndarray] = [self._silence(self._gap_ms)]
        words: list[WordTiming] = []
        position = len(parts[0])
        for start, end in speakable.words():
            tone = self._tone((end - start) * self._ms_per_char)
            source_start, source_end = speakable.source_span(start, end)
            words.append(WordTiming(source_start, source_end, self._ms(position), self._ms(position + len(tone))))
            parts += [tone, self._silence(self._gap_ms)]
            position += len(tone) + len(parts[-1])
        if stop.wait(self._step_s):
            return None
        return SynthSegment(index, source, np.concatenate(parts), self._rate, tuple(words))

    def _tone(self, ms: float) -> np.ndarray:
        t = np.arange(round(ms * self._rate / 1000)) / self._rate
        return (8000 * np.sin(2 * np.pi * 220 * t)).astype(np.int16)

    def _silence(self, ms: float) -> np.ndarray:
        return np.zeros(round(ms * self._rate / 1000), dtype=np.int16)

    def _ms(self, samples: int) -> float:
        return 1000.0 * samples / self._rate
