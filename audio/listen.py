"""The listening chain: source -> echo canceller -> VAD -> barge-in detector, on the event loop."""

from __future__ import annotations

import collections
from collections.abc import Callable

import numpy as np

from audio.aec import EchoCanceller
from audio.bargein import BargeInDetector, EchoEvidence
from audio.events import BargeIn, CaptureFailed, SpeechEnded, SpeechStarted
from audio.ports import RATE, AudioSource, Frame
from audio.vad import Vad

ListenEvent = SpeechStarted | SpeechEnded | BargeIn | CaptureFailed
KEEP_S = 2.0


ECHO_LAGS_S = (-0.2, 0.5)  # how far the microphone may lag the played signal (acoustic path, DAC-time error)
ECHO_WINDOW_S = 0.3  # the end of a speech run compared with the played signal
ERL_WINDOW_S = 1.0  # the echo path's gain is measured over this much audio before a speech run
ECHO_PATH_S = 0.1  # the played signal this long before a stretch of audio may still echo in it
SILENT_POWER = 1e-7  # a played signal below this mean square (-70 dBFS) is silence


def _power(samples: np.ndarray) -> float:
    return float(np.mean(np.square(samples, dtype=np.float64))) if len(samples) else 0.0


class _EnergyLog:
    """The last seconds of audio and its energy per frame, to ask how much the canceller removed from a stretch
    of audio and what is left of it."""

    def __init__(self) -> None:
        self._frames: collections.deque[tuple[Frame, float]] = collections.deque()

    def add(self, frame: Frame) -> None:
        samples = frame.samples.astype(np.float64)
        self._frames.append((frame, float(np.dot(samples, samples))))
        while self._frames and self._frames[0][0].end < frame.end - KEEP_S:
            self._frames.popleft()

    def energy(self, start: float, end: float) -> float:
        return sum(e for _, e in self._overlapping(start, end))

    def power(self, start: float, end: float) -> float | None:
        """Mean square over the frames overlapping [start, end) (None without any)."""
        frames = self._overlapping(start, end)
        samples = sum(len(f.samples) for f, _ in frames)
        return sum(e for _, e in frames) / samples if samples else None

    def audio(self, start: float, end: float) -> tuple[float, np.ndarray]:
        """(time of the first sample, samples) of the frames overlapping [start, end)."""
        frames = [f for f, _ in self._overlapping(start, end)]
        if not frames:
            return start, np.zeros(0, dtype=np.float32)
        return frames[0].at, np.concatenate([f.samples for f in frames])

    def _overlapping(self, start: float, end: float) -> list[tuple[Frame, float]]:
        return [(f, e) for f, e in self._frames if f.end > start and f.at < end]


def echo_likeness(residual: np.ndarray, played: np.ndarray) -> float:
    """Peak normalised cross-correlation of `residual` against every window of `played` (longer, 16 kHz): near 1
    when the residual is the played signal again (echo the canceller let through), low for a voice of its own."""
    n = len(residual)
    if n == 0 or len(played) < n or not np.any(residual):
        return 0.0
    size = 1 << (len(played) + n - 1).bit_length()
    spectrum = np.fft.rfft(played, size) * np.conj(np.fft.rfft(residual, size))
    dots = np.fft.irfft(spectrum, size)[: len(played) - n + 1]
    window_energy = np.convolve(np.square(played, dtype=np.float64), np.ones(n), mode="valid")
    norms = np.sqrt(window_energy * float(np.dot(residual, residual))) + 1e-12
    return float(np.max(np.abs(dots) / norms))


class Listener:
    """Runs until the source ends or fails; cleaned audio goes to `on_audio` (for ASR), facts to `on_event`.

    VAD and AEC steps are well under a millisecond per frame, so they run inline rather than in a thread.
    Barge-in is echo-aware four times over: the VAD hears the cleaned signal; a speech run from which the
    canceller removed more than the detector's `max_echo_suppression_db` is taken for the assistant's own voice;
    so is one whose residual still follows the played signal (the canceller converging), and one no louder at
    the microphone than the played signal's echo (the canceller thrown off, e.g. by a jump in the timeline).
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

    def echo_likeness(self, start: float, end: float) -> float:
        """How closely the cleaned audio of [start, end) follows what was played just before (0 without AEC)."""
        if self.echo is None or not self.echo.enabled:
            return 0.0
        at, residual = self._clean.audio(max(start, end - ECHO_WINDOW_S), end)
        early, late = ECHO_LAGS_S
        played = self.echo.played(at - late, len(residual) + round((late - early) * RATE))
        return echo_likeness(residual.astype(np.float64), played.astype(np.float64))

    def excess_db(self, start: float, end: float) -> float | None:
        """How much louder the microphone is over [start, end) than the echo alone would make it, the echo path's
        gain taken from the second before: a voice of its own adds energy, the assistant's echo does not, however
        well the canceller is doing. None when there is nothing to compare (no playback lately, or none now)."""
        if self.echo is None or not self.echo.enabled:
            return None
        path = ECHO_PATH_S
        past_raw, run_raw = self._raw.power(start - ERL_WINDOW_S, start), self._raw.power(start, end)
        past_ref, run_ref = (
            _power(self.echo.played(start - ERL_WINDOW_S - path, round(ERL_WINDOW_S * RATE))),
            _power(self.echo.played(start - path, round((end - start + path) * RATE))),
        )
        if past_raw is None or run_raw is None or past_ref < SILENT_POWER or run_ref < SILENT_POWER:
            return None
        echo_gain = past_raw / past_ref
        return float(10 * np.log10((run_raw + 1e-12) / (echo_gain * run_ref + 1e-12)))

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
        if detector is None or not detector.ready(voiced):
            return
        start = now - voiced / 1000.0
        suppressed = self.suppression_db(start, now) if self.echo is not None else 0.0
        evidence = EchoEvidence(suppressed, self.echo_likeness(start, now), self.excess_db(start, now))
        if (fired := detector.advance(now, voiced, evidence)) is not None:
            on_event(fired)
