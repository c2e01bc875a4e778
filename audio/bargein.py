"""Barge-in: speech onset (after echo cancellation) or push-to-talk while the assistant thinks or speaks.

On a barge-in the output pauses at once; `resolve` then asks the caller (the transcriber) whether the speech held
words: no words within the window resumes the reply where it stopped, words (or no answer in time) confirm it and
the caller cancels the turn. Push-to-talk is confirmed at once.

Before the VAD can tell (it needs ~100 ms of voiced sound), an onset - sound the played signal cannot explain -
pauses the output already; the VAD then confirms it (the BargeIn follows, the output stays paused) or, once the
sound has died away without speech, the reply resumes where it stopped. Without echo protection (no working echo
canceller on a speaker the microphone hears) only push-to-talk interrupts: never a reply interrupted by itself.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Protocol

import anyio

from adapters.contract.clock import Clock
from adapters.runtime.tasks import open_tasks
from audio.events import BargeIn, BargeInConfirmed, FalseBargeInResumed, OnsetPaused, OnsetResumed

log = logging.getLogger(__name__)
Fact = BargeIn | BargeInConfirmed | FalseBargeInResumed | OnsetPaused | OnsetResumed
ONSET_HOLD_S = 0.25  # an onset pause ends this long after the last sign of sound, unless the VAD hears speech
ONSET_VOICE_SIGNS = 10  # an onset this many signs long (10 ms chunks of unexplained sound) sounds like a voice...
ONSET_VOICE_HOLD_S = 0.5  # ...and holds the pause this long after its last sign: the gap after a short "Stop."
ONSET_MAX_S = 1.2  # and at the latest this long after the onset, unless a barge-in took it over
ONSET_LEAD_S = 0.3  # an onset this much before the VAD's speech run is where that speech began
CANCELLER_GAIN_DB = 10.0  # a run this much louder after the echo canceller than before it: no sound of the room's


@dataclass(frozen=True)
class EchoEvidence:
    """What the listening chain measured of a speech run, to tell the user's voice from the assistant's echo."""

    suppressed_db: float = 0.0  # how much the echo canceller removed from the run
    likeness: float = 0.0  # peak normalised correlation of what is left with the played signal
    unexplained: float | None = None  # share of the run's microphone power the echo path cannot explain


NO_ECHO = EchoEvidence()


class Pausable(Protocol):
    def pause(self) -> float:
        """Go silent from the next block; returns when the output is silent (clock): what it holds plays out."""
        ...

    def resume(self) -> None: ...


class BargeInDetector:
    """Feed it the VAD's speech run after each frame; it reports facts through the return values and `on_fact`."""

    def __init__(
        self,
        output: Pausable,
        clock: Clock,
        *,
        min_speech_ms: float = 80.0,
        resolve_window_ms: float = 1500.0,
        max_echo_suppression_db: float = 10.0,
        max_canceller_gain_db: float = CANCELLER_GAIN_DB,
        max_echo_likeness: float = 0.8,
        min_unexplained: float = 0.1,
        on_fact: Callable[[Fact], None] | None = None,
    ) -> None:
        self._output = output
        self._clock = clock
        self.min_speech_ms = min_speech_ms
        self.resolve_window_ms = resolve_window_ms
        self.max_echo_suppression_db = max_echo_suppression_db
        self.max_canceller_gain_db = max_canceller_gain_db
        self.max_echo_likeness = max_echo_likeness
        self.min_unexplained = min_unexplained
        self._on_fact = on_fact
        self._armed = False
        self._pending: BargeIn | None = None  # fired, not yet resolved
        self._onset: OnsetPaused | None = None  # paused on an onset, not yet confirmed by the VAD
        self._onset_heard = 0.0  # audio time of the onset pause's last sign of sound
        self._signs = 0  # of the onset pause in effect
        self._voiced = False  # the VAD heard speech during the onset pause in effect
        self.protected = True  # False: echo protection lost, only push-to-talk interrupts

    @property
    def armed(self) -> bool:
        return self._armed

    @property
    def pending(self) -> bool:
        """A barge-in has fired and is not yet resolved: the output is paused for a voice the VAD heard."""
        return self._pending is not None

    def arm(self) -> None:
        """The assistant is thinking or speaking: interruptions count from now."""
        self._armed = True

    def disarm(self) -> None:
        self._armed = False
        self._pending = None
        self._end_onset()

    def ready(self, voiced_ms: float) -> bool:
        """Would `voiced_ms` of speech fire now, echo aside? (Lets the caller skip measuring the echo.)"""
        return self._listening() and voiced_ms + 1e-6 >= self.min_speech_ms

    def _listening(self) -> bool:
        return self._armed and self.protected and self._pending is None

    def set_protected(self, protected: bool) -> None:
        """Echo protection lost (False) or back: without it, speech over the assistant does not interrupt."""
        self.protected = protected
        if not protected:
            self._end_onset()

    def onset(self, audio_time: float) -> OnsetPaused | None:
        """Sound the played signal cannot explain at `audio_time` (one call per 10 ms of it): pause now, let the
        VAD decide. A long onset is held longer: a short "Stop." the canceller hid from the VAD, and the gap
        before the words that follow it, must not let a blip of the reply through."""
        if not self._listening():
            return None
        self._onset_heard = audio_time
        self._signs += 1
        if self._onset is not None:
            return None
        self._signs, self._voiced = 1, False
        self._onset = OnsetPaused(audio_time, self._output.pause())
        self._emit(self._onset)
        return self._onset

    def tick(self, audio_time: float, voiced_ms: float) -> OnsetResumed | None:
        """After each frame: an onset pause with no speech behind it ends once its sound has died away. Speech the
        VAD hears in it is a sign of sound, and of a voice, even when the listener holds that run back as echo: a
        soft "Stop" as loud as the reply's echo under it is explained away, and resuming 0.25 s after it let the
        reply play on until "What time is it?" (issue 36, stop_ms 658 on the loopback)."""
        onset = self._onset
        if onset is None:
            return None
        if voiced_ms > 0:
            self._onset_heard, self._voiced = max(self._onset_heard, audio_time), True
        voice = self._voiced or self._signs >= ONSET_VOICE_SIGNS
        hold = ONSET_VOICE_HOLD_S if voice else ONSET_HOLD_S
        if audio_time - self._onset_heard < hold and audio_time - onset.at < ONSET_MAX_S:
            return None
        return self._end_onset()

    def _end_onset(self) -> OnsetResumed | None:
        if self._onset is None:
            return None
        start, self._onset = self._onset, None
        log.debug("onset at %.3f resumed after %d signs of sound", start.at, self._signs)
        self._output.resume()
        resumed = OnsetResumed(start.at, self._clock.now())
        self._emit(resumed)
        return resumed

    def advance(self, audio_time: float, voiced_ms: float, echo: EchoEvidence = NO_ECHO) -> BargeIn | None:
        """The VAD has judged audio up to `audio_time` and hears `voiced_ms` of unbroken speech: fire once it
        lasts the minimum (a lone blip does not) and the stretch is not the assistant's own voice: the echo
        canceller removed no more than `max_echo_suppression_db` from it and did not make it louder by more than
        `max_canceller_gain_db` (no canceller adds a voice: what the microphone did not hear, nobody said), what
        is left does not follow the played signal (a canceller still converging), and at least `min_unexplained`
        of the microphone's power is more than the echo path explains (a canceller thrown off, or not converged
        at a reply's start)."""
        if not self.ready(voiced_ms) or self._is_echo(echo):
            return None
        onset, self._onset = self._onset, None
        start = audio_time - voiced_ms / 1000.0
        if onset is not None:  # the output is paused already: the barge-in takes the pause over
            at = onset.at if start - ONSET_LEAD_S <= onset.at <= start else start
            return self._fire(BargeIn(at, "vad", audio_time, onset.paused_at), pause=False)
        return self._fire(BargeIn(start, "vad", audio_time))

    def _is_echo(self, echo: EchoEvidence) -> bool:
        return (
            echo.suppressed_db > self.max_echo_suppression_db
            or echo.suppressed_db < -self.max_canceller_gain_db
            or echo.likeness > self.max_echo_likeness
            or (echo.unexplained is not None and echo.unexplained < self.min_unexplained)
        )

    def push_to_talk(self, at: float | None = None) -> BargeInConfirmed | None:
        """A push-to-talk press: while armed it interrupts at once, no resolve step."""
        if not self._armed:
            return None
        now = self._clock.now()
        self._onset = None
        silent = self._output.pause()
        pressed = at if at is not None else now
        self._emit(BargeIn(pressed, "push_to_talk", now, silent))
        return self._confirm(BargeIn(pressed, "push_to_talk", now, silent))

    async def resolve(
        self, barge_in: BargeIn, has_words: Callable[[], Awaitable[bool]]
    ) -> BargeInConfirmed | FalseBargeInResumed:
        """Ask `has_words` (bounded by the window, on the injected clock); resume on a clear "no", confirm otherwise.
        Whichever ends first cancels the other, and both have ended when this returns."""
        answers: list[bool] = []
        with anyio.CancelScope() as done:
            async with open_tasks() as tasks:
                tasks.start(self._ask, has_words, answers, done, name="barge-in:words")
                tasks.start(self._window, done, name="barge-in:window")
        words = answers[0] if answers else None
        if words is False and self._pending is barge_in:
            self._pending = None
            self._output.resume()
            resumed = FalseBargeInResumed(barge_in.at, self._clock.now())
            self._emit(resumed)
            return resumed
        return self._confirm(barge_in)

    async def _ask(
        self, has_words: Callable[[], Awaitable[bool]], answers: list[bool], done: anyio.CancelScope
    ) -> None:
        try:
            answers.append(await has_words())
        except Exception:  # an answer that failed is no answer: the interruption is confirmed
            log.exception("barge-in: asking for words failed")
        done.cancel()

    async def _window(self, done: anyio.CancelScope) -> None:
        await self._clock.sleep(self.resolve_window_ms / 1000.0)
        done.cancel()

    def _fire(self, barge_in: BargeIn, *, pause: bool = True) -> BargeIn:
        if pause:
            barge_in = replace(barge_in, paused_at=self._output.pause())
        self._pending = barge_in
        self._emit(barge_in)
        return barge_in

    def _confirm(self, barge_in: BargeIn) -> BargeInConfirmed:
        self._pending = None
        self._armed = False
        confirmed = BargeInConfirmed(barge_in.at, barge_in.source, self._clock.now())
        self._emit(confirmed)
        return confirmed

    def _emit(self, fact: Fact) -> None:
        if self._on_fact is not None:
            self._on_fact(fact)
