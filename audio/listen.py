"""The listening chain: source -> echo canceller -> VAD -> barge-in detector, on the event loop."""

from __future__ import annotations

import collections
from collections.abc import Callable

import numpy as np

from audio.aec import EchoCanceller
from audio.bargein import BargeInDetector
from audio.events import BargeIn, CaptureFailed, SpeechEnded, SpeechStarted
from audio.ports import AudioSource, Frame
from audio.vad import Vad

ListenEvent = SpeechStarted | SpeechEnded | BargeIn | CaptureFailed
KEEP_S = 2.0


class _EnergyLog:
    """Energy per frame over the last seconds, to ask how much the canceller removed from a stretch of audio."""

    def __init__(self) -> None:
        self._frames: collections.deque[tuple[float, float, float]] = collections.deque()

    def add(self, frame: Frame) -> None:
        samples = frame.samples.astype(np.float64)
        self._frames.append((frame.at, frame.end, float(np.dot(samples, samples))))
        while self._frames and self._frames[0][1] < frame.end - KEEP_S:
            self._frames.popleft()

    def energy(self, start: float, end: float) -> float:
        return sum(e for at, stop, e in self._frames if stop > start and at < end)


class Listener:
    """Runs until the source ends or fails; cleaned audio goes to `on_audio` (for ASR), facts to `on_event`.

    VAD and AEC steps are well under a millisecond per frame, so they run inline rather than in a thread.
    Barge-in is echo-aware twice over: the VAD hears the cleaned signal, and a speech run from which the
    canceller removed more than the detector's `max_echo_suppression_db` is taken for the assistant's own voice.
    """

    def __init__(
        self,
        source: AudioSource,
        vad: Vad,
        *,
        echo: EchoCanceller | None = None,
        barge_in: BargeInDetector | None = None,
    ) -> None:
        self.source = source
        self.vad = vad
        self.echo = echo
        self.barge_in = barge_in
        self.frames = 0
        self._raw = _EnergyLog()
        self._clean = _EnergyLog()

    async def run(
        self, on_event: Callable[[ListenEvent], None], on_audio: Callable[[Frame], None] | None = None
    ) -> CaptureFailed | None:
        async for item in self.source.frames():
            if isinstance(item, CaptureFailed):
                on_event(item)
                return item
            self._raw.add(item)
            for clean in self.echo.process(item) if self.echo is not None else [item]:
                self._step(clean, on_event, on_audio)
        return None

    def suppression_db(self, start: float, end: float) -> float:
        """How much quieter the cleaned audio is than the captured audio over [start, end)."""
        raw, clean = self._raw.energy(start, end), self._clean.energy(start, end)
        return float(10 * np.log10((raw + 1e-9) / (clean + 1e-9)))

    def _step(
        self, frame: Frame, on_event: Callable[[ListenEvent], None], on_audio: Callable[[Frame], None] | None
    ) -> None:
        self.frames += 1
        self._clean.add(frame)
        if on_audio is not None:
            on_audio(frame)
        for event in self.vad.feed(frame):
            on_event(event)
        detector, now, voiced = self.barge_in, self.vad.processed_until, self.vad.voiced_ms
        if detector is None or voiced + 1e-6 < detector.min_speech_ms:
            return
        suppressed = self.suppression_db(now - voiced / 1000.0, now) if self.echo is not None else 0.0
        if (fired := detector.advance(now, voiced, suppressed)) is not None:
            on_event(fired)
