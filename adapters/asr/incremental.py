"""Transcribe while the user is still speaking, so the turn's text is ready when the turn is decided.

While speech lasts, every `interval_s` (at most, on the injected clock) the whole growing utterance is transcribed
again and the latest result kept: the partial that a barge-in asks for words. At a pause, `speculate` gives the
final pass, run before anyone knows whether the turn is over: the transcript of everything up to the pause (the
latest pass when it already reaches that far, else one more). If the user goes on, a later pause speculates
again. `finish` reuses the latest pass when nothing but quiet arrived after it; otherwise one last pass runs
(push-to-talk, or a tail the last pass missed). Quiet audio (a pause) starts no partial pass: the CPU is left to
the end-of-turn model and the prefill that run then. Except once, early: when the VAD falls silent (`pause_began`,
before its hangover has run out) after words no pass has heard, and nothing loud came since, those words are
transcribed at once rather than after the rest. By the time the pause is one, its final pass is made (or nearly):
the reply can begin while the end-of-turn model still listens.

Each pass reads the whole utterance: Whisper's encoder reads at least a 10 s window (adapters/asr/whisper.py),
so a pass over only the new audio would cost the same. A pass that hears no words is made again from where the
speech began (`speech_begins`), without the sound kept from before it: that lead-in, there to save a first
syllable, can hold what makes Whisper take the whole utterance for noise (the echo canceller's double talk as a
barge-in begins over a loud reply).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import anyio
import numpy as np

from adapters.asr import guard
from adapters.contract.cancel import CancelCause, CancelSignal
from adapters.contract.clock import Clock
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples, Transcriber, Transcript

TAIL_QUIET_DBFS = -45.0  # audio this quiet holds no new words worth a pass
EARLY_QUIET_S = 0.03  # ... and this much of it after the last loud audio lets a pause's pass begin early


class IncrementalTranscriber:
    """Feed with `append`, run `run(signal)` as a task while speech lasts, `speculate` at a pause, then `finish`."""

    def __init__(
        self,
        transcriber: Transcriber,
        clock: Clock,
        *,
        interval_s: float = 0.8,
        min_new_s: float = 0.3,
        on_partial: Callable[[Transcript], None] | None = None,
    ) -> None:
        self._transcriber = transcriber
        self._clock = clock
        self._interval_s = interval_s
        self._min_new = round(min_new_s * ASR_SAMPLE_RATE)
        self._on_partial = on_partial
        self._chunks: list[Samples] = []
        self._length = 0
        self._loud_until = 0  # samples up to the end of the last chunk that was not quiet
        self._until: float | None = None  # clock time of the end of the audio appended so far (if told)
        self._covered = 0
        self._covered_until: float | None = None
        self._latest: Transcript | None = None
        self._wake = asyncio.Event()
        self._ended = False
        self._generation = 0  # one `run` at a time: a reopened utterance's run replaces the one `finish` ended
        self._resting: anyio.CancelScope | None = None
        self._pass_lock = asyncio.Lock()
        self._early = False  # a pause began after words no pass has heard: transcribe them now, not after the rest
        self._early_since: float | None = None  # the silence the last early pass was for
        self._speech_from = 0  # samples of lead-in before the speech began
        self._under_way: tuple[int, float | None] | None = None  # what the pass under way reads: samples, clock time
        self.passes = 0
        self.reused_final = False

    @property
    def latest(self) -> Transcript | None:
        """The most recent (partial) transcript, or None before the first pass."""
        return self._latest

    @property
    def buffered_s(self) -> float:
        return self._length / ASR_SAMPLE_RATE

    @property
    def covered_s(self) -> float:
        """How much of the buffered audio the latest pass has seen."""
        return self._covered / ASR_SAMPLE_RATE

    @property
    def covered_until(self) -> float | None:
        """Clock time up to which the latest pass has heard the audio (None before a pass, or without times)."""
        return self._covered_until

    def audio(self) -> Samples:
        """Everything appended so far, as one array."""
        self._compact()
        return self._chunks[0] if self._chunks else np.zeros(0, dtype=np.float32)

    def append(self, samples: Samples, until: float | None = None) -> None:
        """Add mono float32 16 kHz audio (on the event loop's thread); `until`: the clock time its last sample ends."""
        if len(samples):
            chunk = np.asarray(samples, dtype=np.float32)
            self._chunks.append(chunk)
            self._length += len(chunk)
            if guard.dbfs(chunk) >= TAIL_QUIET_DBFS:
                self._loud_until = self._length
            self._wake.set()
        if until is not None:
            self._until = until

    def speech_begins(self, at: float) -> None:
        """The speech began at clock time `at`: what was appended before it is lead-in."""
        behind = 0.0 if self._until is None else max(0.0, self._until - at)
        self._speech_from = max(0, self._length - round(behind * ASR_SAMPLE_RATE))

    async def run(self, signal: CancelSignal) -> None:
        """Re-transcribe at most every `interval_s` (once `min_new_s` of new sound is in) until `finish` or `signal`."""
        unsubscribe = signal.on_cancel(self._on_cancel)
        generation = self._generation
        try:
            while True:
                if not self._due():  # (a wake-up another run consumed is not missed)
                    await self._wake.wait()
                    self._wake.clear()
                if self._ended or signal.cancelled or generation != self._generation:
                    return
                if not self._due():
                    continue  # too little new sound to change the result; wait for more
                started = self._clock.now()
                async with self._pass_lock:
                    if self._ended:
                        return
                    if not self._due():
                        continue  # a speculative pass got the lock first and covered it
                    await self._transcribe(signal)
                await self._rest(started + self._interval_s - self._clock.now())
        finally:
            unsubscribe()

    def reopen(self) -> None:
        """More speech after `finish`: the utterance goes on (`run` it again); the next `finish` covers it all."""
        self._ended = False
        self._generation += 1
        self._stop_waiting()  # the run `finish` ended, if it has not noticed yet, sees it was replaced
        self.reused_final = False

    def pause_began(self, since: float) -> None:
        """The VAD hears silence from clock time `since` on (its hangover still running): if words no pass has
        heard came before it and only quiet after them, transcribe them now. Once per silence."""
        if self._ended or since == self._early_since or self._loud_until <= self._covered:
            return
        if self._length - self._loud_until < EARLY_QUIET_S * ASR_SAMPLE_RATE:
            return  # still loud (a noisy room, or not a pause after all): the pause's own pass will do
        self._early_since, self._early = since, True
        self._stop_waiting()

    async def speculate(self, signal: CancelSignal, since: float) -> Transcript:
        """The transcript of the utterance up to the pause whose silence began at clock time `since`: the latest
        pass (or the one under way) when it reaches that far, else a new pass over everything heard so far."""
        async with self._pass_lock:
            latest = self._latest
            if latest is not None and (self._covered >= self._length or self._reaches(since)):
                return latest
            return await self._transcribe(signal)

    async def finish(self, signal: CancelSignal) -> Transcript:
        """The final transcript: the latest pass when only quiet came after it, else one more pass."""
        self._ended = True
        self._stop_waiting()
        async with self._pass_lock:
            latest = self._latest
            if latest is not None and self._tail_is_quiet():
                self.reused_final = True
                return latest
            return await self._transcribe(signal)

    def reading_up_to(self, since: float) -> bool:
        """A pass under way reads the audio up to clock time `since`, and nothing loud came after it: the words of a
        pause whose silence began then are being made already."""
        if self._under_way is None:
            return False
        length, until = self._under_way
        return until is not None and until >= since and self._loud_until <= length

    def _due(self) -> bool:
        return self._worth_a_pass() or self._early_due()

    def _early_due(self) -> bool:
        return self._early and self._loud_until > self._covered

    def _worth_a_pass(self) -> bool:
        return self._length - self._covered >= self._min_new and not self._tail_is_quiet()

    def _reaches(self, since: float) -> bool:
        return self._covered_until is not None and self._covered_until >= since and self._tail_is_quiet()

    async def _transcribe(self, signal: CancelSignal) -> Transcript:
        length, until, early = self._length, self._until, self._early
        audio = self.audio()
        self._under_way = (length, until)
        try:
            result = await self._transcriber.transcribe(audio, signal)
            self.passes += 1
            if result.empty and self._speech_from > 0 and length - self._speech_from >= self._min_new:
                result = await self._without_lead_in(audio, result, signal)
        finally:
            self._under_way = None
        self._latest, self._covered, self._covered_until = result, length, until
        self._early = self._early and not early  # words after an early pass: the user went on, the rest is as usual
        if self._on_partial is not None and not self._ended:
            self._on_partial(result)
        return result

    async def _without_lead_in(self, audio: Samples, heard: Transcript, signal: CancelSignal) -> Transcript:
        """The pass again from where the speech began, its word times still counted from the lead-in's start; if
        it hears no words either, the whole pass stands (its reason for hearing none is the one to tell)."""
        result = await self._transcriber.transcribe(audio[self._speech_from :], signal)
        self.passes += 1
        if result.empty:
            return heard
        lead = self._speech_from / ASR_SAMPLE_RATE
        words = tuple(replace(w, start_s=w.start_s + lead, end_s=w.end_s + lead) for w in result.words)
        return replace(result, words=words, duration_s=heard.duration_s)

    def _compact(self) -> None:
        if len(self._chunks) > 1:
            self._chunks = [np.concatenate(self._chunks)]

    def _tail_is_quiet(self) -> bool:
        """Nothing louder than TAIL_QUIET_DBFS arrived after the latest pass's audio."""
        return self._loud_until <= self._covered

    async def _rest(self, seconds: float) -> None:
        """Sleep on the clock, waking early when the utterance ends or the signal fires."""
        if seconds <= 0 or self._ended or self._early_due():
            return
        with anyio.CancelScope() as scope:
            self._resting = scope
            try:
                await self._clock.sleep(seconds)
            finally:
                self._resting = None

    def _stop_waiting(self) -> None:
        self._wake.set()
        if self._resting is not None:
            self._resting.cancel()

    def _on_cancel(self, _cause: CancelCause) -> None:
        self._stop_waiting()
