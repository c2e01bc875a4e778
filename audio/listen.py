"""The listening chain: source -> echo canceller -> VAD -> barge-in detector, on the event loop."""

from __future__ import annotations

import collections
import itertools
import logging
import math
from collections.abc import Callable

import numpy as np

from audio.aec import EchoCanceller
from audio.bargein import CANCELLER_GAIN_DB, BargeInDetector, EchoEvidence
from audio.echo_path import CHUNK, VOICE_POWER, ChunkEcho, EchoPath
from audio.events import (
    BargeIn,
    CaptureFailed,
    EchoProtectionLost,
    EchoProtectionRestored,
    EchoRunDropped,
    OnsetPaused,
    OnsetResumed,
    SpeechEnded,
    SpeechStarted,
)
from audio.levels import speech_level_dbfs
from audio.near_end import NearEnd
from audio.ports import RATE, AudioSource, Frame, Paced
from audio.protection import EchoMonitor
from audio.vad import Vad

log = logging.getLogger(__name__)

ListenEvent = (
    SpeechStarted
    | SpeechEnded
    | BargeIn
    | CaptureFailed
    | OnsetPaused
    | OnsetResumed
    | EchoProtectionLost
    | EchoProtectionRestored
    | EchoRunDropped
)
KEEP_S = 2.0
IDLE_FRAMES = 3  # frames a paced source hands over per wake-up of the loop in a silent room (60 ms at 20 ms)


ECHO_LAGS_S = (-0.2, 1.0)  # how far the microphone may lag the played signal (acoustic path, DAC-time error)
ECHO_WINDOW_S = 0.3  # the end of a speech run compared with the played signal
ONSET_POWER = VOICE_POWER  # unexplained sound this loud (mean square, -45 dBFS) is an onset...
ONSET_CHUNKS = 2  # ...once it lasts this many 10 ms chunks
ECHO_POWER = 1e-6  # explained echo below this (-60 dBFS) is none
ECHO_UNDER = 10.0  # after the echo's delay, the microphone is heard once the echo left is 10 dB under it
ECHO_RUN_UNEXPLAINED = 0.1  # a speech run with less of its power unexplained than this is the assistant's echo


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

    def span(self) -> str:
        """The stretch of time held (for a log line that asks whether two logs agree on their timeline)."""
        return f"{self._frames[0][0].at:.3f}-{self._frames[-1][0].end:.3f}" if self._frames else "empty"

    def energy(self, start: float, end: float) -> float:
        return sum(e for _, e in self._overlapping(start, end))

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
    The raw microphone is also held against the echo path (audio.echo_path): sound the played signal cannot
    explain is an onset, and the output pauses on it at once, for the VAD to confirm or not. A VAD speech run is
    a barge-in unless it is the assistant's own voice: the canceller removed more than the detector's
    `max_echo_suppression_db` from it, what is left still follows the played signal (a canceller converging),
    or the echo path explains nearly all of it. Without working echo protection (audio.protection) only
    push-to-talk interrupts.
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
        self.path = EchoPath()
        self.near = NearEnd()
        self._sounded = -math.inf  # clock time of the last 10 ms in which something was played
        self._echo_over = False  # since then: the microphone itself is heard
        self._raw = _EnergyLog()
        self._clean = _EnergyLog()
        self._chunks: collections.deque[ChunkEcho] = collections.deque(maxlen=round(KEEP_S * 100))
        self._pending = np.zeros(0, dtype=np.float32)
        self._pending_at = 0.0
        self._loud_chunks = 0
        self._monitor = EchoMonitor(canceller=echo is not None and echo.enabled) if echo is not None else None
        self._failure: str | None = None
        self._protection: EchoProtectionLost | EchoProtectionRestored | None = None
        self._held: SpeechStarted | None = None  # a speech run the echo path explains so far
        self.echo_runs = 0  # speech runs dropped as the assistant's own voice
        self._idle = False  # a silent room and nothing to interrupt: a paced source hands frames over a few at a time
        self._underrun_at: float | None = None  # the output's latest underrun the echo path was told of

    async def run(
        self, on_event: Callable[[ListenEvent], None], on_audio: Callable[[Frame], None] | None = None
    ) -> CaptureFailed | None:
        if self._monitor is not None and self.echo is not None and not self.echo.has_reference:
            self._report(self._monitor.missing("no echo canceller could be loaded", 0.0), on_event)
        async for item in self.source.frames():
            if isinstance(item, CaptureFailed):
                on_event(item)
                return item
            self._raw.add(item)
            self._hear(item, on_event)
            cleaned = self.echo.process(item) if self.echo is not None else [item]
            for clean in cleaned:
                self._step(clean, on_event, on_audio)
            self._judge(item, cleaned, on_event)
            self._pace()
        return None

    def _pace(self) -> None:
        """Idle CPU: in a silent room with no reply to interrupt, the loop wakes for every third frame, not each
        (issue 13). The first sound, or a reply starting, hands frames over one by one again: at most the two
        frames queued meanwhile come late, in order and with their own stamps."""
        idle = self.vad.gated and not self._attentive()
        if idle != self._idle:
            self._idle = idle
            if isinstance(self.source, Paced):
                self.source.pace(IDLE_FRAMES if idle else 1)

    @property
    def protected(self) -> bool:
        """Echo protection works (or is not needed): VAD barge-ins count."""
        return self._monitor is None or self._monitor.lost is None

    def _hear(self, frame: Frame, on_event: Callable[[ListenEvent], None]) -> None:
        """The raw microphone against the echo path, 10 ms at a time: onsets pause the output."""
        if self.barge_in is not None and self.barge_in.protected != self.protected:
            self.barge_in.set_protected(self.protected)  # a detector attached after protection changed
        if self.echo is not None and self.echo.underrun_at != self._underrun_at:
            self._underrun_at = self.echo.underrun_at
            if self._underrun_at is not None:
                self.path.moved(self._underrun_at)
        if len(self._pending) == 0:
            self._pending_at = frame.at
        self._pending = np.concatenate([self._pending, frame.samples])
        while len(self._pending) >= CHUNK:
            chunk, self._pending = self._pending[:CHUNK], self._pending[CHUNK:]
            at = self._pending_at
            self._pending_at += CHUNK / RATE
            if not self._attentive():
                self._loud_chunks = 0
                continue  # idle listening: nothing played lately and no reply to interrupt
            played = self.echo.played(at, CHUNK) if self.echo is not None else np.zeros(CHUNK, np.float32)
            heard = self.path.step(chunk, played, at, quiet=self._quiet())
            self._chunks.append(heard)
            self._loud_chunks = self._loud_chunks + 1 if heard.unexplained > ONSET_POWER else 0
            detector = self.barge_in
            if detector is not None and self._loud_chunks >= ONSET_CHUNKS:
                onset = at - (ONSET_CHUNKS - 1) * CHUNK / RATE if self._loud_chunks == ONSET_CHUNKS else at
                if (paused := detector.onset(onset)) is not None:
                    on_event(paused)
            self.near.offer(at, chunk, as_is=self._as_is(heard, played))

    def _as_is(self, heard: ChunkEcho, played: np.ndarray) -> bool:
        """May the VAD and Whisper hear this chunk of the microphone itself? Yes once a barge-in has fired, from
        when nothing has been played for longer than the echo path's delay and the echo it can explain is far
        under what the microphone hears, until something plays again: the canceller would still dim the user's
        words there. Not before a barge-in: while the output only pauses on an onset, the canceller's dimming is
        what keeps the echo of a path that moved (an underrun) from the VAD, which took it for the user."""
        if np.any(played):
            self._sounded, self._echo_over = heard.at, False
        if self._echo_over:
            return True
        lasts = self.path.echo_lasts_s()
        if self.barge_in is None or not self.barge_in.pending or lasts is None or heard.at - self._sounded <= lasts:
            return False
        self._echo_over = heard.explained < ECHO_POWER or heard.power > ECHO_UNDER * heard.explained
        return self._echo_over

    def _attentive(self) -> bool:
        """Worth holding against the echo path: a reply to interrupt, or an echo to learn from."""
        armed = self.barge_in is not None and self.barge_in.armed
        return armed or (self.echo is not None and self.echo.enabled and not self.echo.idle)

    def _quiet(self) -> bool:
        """Nobody known to be talking, so the microphone may teach the echo path. The VAD tells only when it
        hears the cleaned signal; without a canceller it hears the echo too, and the path learns throughout."""
        if self.echo is None or not self.echo.enabled:
            return True
        return not self.vad.speaking and self.vad.voiced_ms == 0

    def _judge(self, raw: Frame, cleaned: list[Frame], on_event: Callable[[ListenEvent], None]) -> None:
        """Is the canceller protecting us? Facts when that changes; barge-in follows the answer."""
        monitor, echo = self._monitor, self.echo
        if monitor is None or echo is None:
            return
        if echo.failure != self._failure:
            self._failure = echo.failure
            self._report(monitor.failed(echo.failure, raw.at), on_event)
        recent = [c for c in itertools.islice(reversed(self._chunks), 4) if c.at >= raw.at]
        explained = sum(c.explained for c in recent)
        power = sum(c.power for c in recent)
        unexplained = sum(c.unexplained for c in recent)
        # the path explains what the microphone hears, so nobody talks (not the VAD: it hears a failing canceller)
        echo_only = explained >= ECHO_POWER * len(recent) > 0 and power > 0.1 * explained > 10 * unexplained
        gain = float(np.max(self.path.gains)) if self.path.calibrated else None
        raw_energy = _power(raw.samples) * len(raw.samples)
        clean_energy = sum(_power(f.samples) * len(f.samples) for f in cleaned)
        self._report(monitor.observe(raw.at, raw_energy, clean_energy, echo_gain=gain, echo_only=echo_only), on_event)

    def _report(
        self, fact: EchoProtectionLost | EchoProtectionRestored | None, on_event: Callable[[ListenEvent], None]
    ) -> None:
        if fact is None:
            return
        self._protection = fact
        if self.barge_in is not None:
            self.barge_in.set_protected(isinstance(fact, EchoProtectionRestored))
        on_event(fact)

    def echo_likeness(self, start: float, end: float) -> float:
        """How closely the cleaned audio of [start, end) follows what was played just before (0 without AEC)."""
        if self.echo is None or not self.echo.enabled:
            return 0.0
        at, residual = self._clean.audio(max(start, end - ECHO_WINDOW_S), end)
        early, late = ECHO_LAGS_S
        played = self.echo.played(at - late, len(residual) + round((late - early) * RATE))
        return echo_likeness(residual.astype(np.float64), played.astype(np.float64))

    def unexplained(self, start: float, end: float) -> float | None:
        """The share of the microphone's power over [start, end) that the echo path does not explain: near 0
        for the assistant's echo however the canceller is doing, a good part of it for a voice of its own.
        None when nothing played there (no echo to mistake the voice for)."""
        chunks = [c for c in self._chunks if c.at + CHUNK / RATE > start and c.at < end]
        if sum(c.explained for c in chunks) < ECHO_POWER * max(1, len(chunks)):
            return None
        return sum(c.unexplained for c in chunks) / (sum(c.power for c in chunks) + 1e-12)

    def _speech(self, events: list[SpeechStarted | SpeechEnded], on_event: Callable[[ListenEvent], None]) -> None:
        """The VAD's speech runs, less the assistant's own voice: a run the echo path explains is held back
        while it stays explained (told, with its start, once it is not) and dropped when it ends so. Otherwise a
        canceller's residue would become a user utterance (issue 12: Parley answering its own echo)."""
        now = self.vad.processed_until
        for event in events:
            if isinstance(event, SpeechStarted) and self._echo_run(event.at, now):
                self._held = event
            elif isinstance(event, SpeechEnded) and self._held is not None:
                on_event(self._echo_dropped(self._held.at, event.at))
                self._held = None
                self.echo_runs += 1
            else:
                on_event(event)
        if self._held is not None and not self._echo_run(self._held.at, now):
            held, self._held = self._held, None
            on_event(held)

    def _echo_run(self, start: float, end: float) -> bool:
        return self._echo_evidence(start, end) is not None

    def _echo_evidence(self, start: float, end: float) -> str | None:
        """Why [start, end) is the assistant's echo, in words; None when it may be a voice of the room's."""
        unexplained = self.unexplained(start, end)
        if unexplained is not None and unexplained < ECHO_RUN_UNEXPLAINED:
            return f"the played signal explains {100 * (1 - unexplained):.0f}% of the microphone's power"
        if self._canceller_made(start, end):
            return f"the canceller's output is {-self.suppression_db(start, end):.0f} dB louder than the microphone"
        return None

    def _echo_dropped(self, start: float, end: float) -> EchoRunDropped:
        """The record of a run dropped as echo: its level as the VAD heard it, and the evidence at its end."""
        level = speech_level_dbfs(self._clean.audio(start, end)[1])
        why = self._echo_evidence(start, end) or "the played signal explained it while it lasted"
        return EchoRunDropped(start, end, round(level, 1) if math.isfinite(level) else None, why)

    def _canceller_made(self, start: float, end: float) -> bool:
        """The cleaned audio of [start, end) is far louder than what the microphone heard: no voice of the room's
        (a canceller cannot add one), so no user speech however the VAD judged it (issue 12: a CI run took such
        a run, the microphone silent under it, for a barge-in at a reply's first words)."""
        if self.echo is None or not self.echo.enabled:
            return False
        suppressed = self.suppression_db(start, end)
        if suppressed >= -CANCELLER_GAIN_DB:
            return False
        log.debug(
            "speech run %.3f-%.3f louder after the canceller (%.1f dB): not the room's; microphone %s, cleaned %s",
            start,
            end,
            suppressed,
            self._raw.span(),
            self._clean.span(),
        )
        return True

    def suppression_db(self, start: float, end: float) -> float:
        """How much quieter the cleaned audio is than the captured audio over [start, end)."""
        raw, clean = self._raw.energy(start, end), self._clean.energy(start, end)
        return float(10 * np.log10((raw + 1e-9) / (clean + 1e-9)))

    def _step(
        self, frame: Frame, on_event: Callable[[ListenEvent], None], on_audio: Callable[[Frame], None] | None
    ) -> None:
        self.frames += 1
        self._clean.add(frame)
        frame = self.near.mix(frame)
        if on_audio is not None:
            on_audio(frame)
        self.vad.may_gate = not self._attentive()  # the energy gate is for an idle room, never around a reply
        self._speech(self.vad.feed(frame), on_event)
        detector, now, voiced = self.barge_in, self.vad.processed_until, self.vad.voiced_ms
        if detector is None:
            return
        if (resumed := detector.tick(now, voiced)) is not None:
            self.path.remeasure(resumed.at)
            on_event(resumed)
        if not detector.ready(voiced):
            return
        start = now - voiced / 1000.0
        suppressed = self.suppression_db(start, now) if self.echo is not None else 0.0
        evidence = EchoEvidence(suppressed, self.echo_likeness(start, now), self.unexplained(start, now))
        if (fired := detector.advance(now, voiced, evidence)) is not None:
            log.debug("barge-in at %.3f: %s, echo path delay %s chunks", fired.at, evidence, self.path.delay_chunks)
            on_event(fired)
