"""Barge-in: speech onset (after echo cancellation) or push-to-talk while the assistant thinks or speaks.

On a barge-in the output pauses at once; `resolve` then asks the caller (the transcriber) whether the speech held
words: no words within the window resumes the reply where it stopped, words (or no answer in time) confirm it and
the caller cancels the turn. Push-to-talk is confirmed at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import anyio

from adapters.contract.tasks import open_tasks
from audio.events import BargeIn, BargeInConfirmed, FalseBargeInResumed
from audio.ports import Clock

log = logging.getLogger(__name__)
Fact = BargeIn | BargeInConfirmed | FalseBargeInResumed


@dataclass(frozen=True)
class EchoEvidence:
    """What the listening chain measured of a speech run, to tell the user's voice from the assistant's echo."""

    suppressed_db: float = 0.0  # how much the echo canceller removed from the run
    likeness: float = 0.0  # peak normalised correlation of what is left with the played signal
    excess_db: float | None = None  # microphone level above the echo the played signal explains (None: unknown)


NO_ECHO = EchoEvidence()


class Pausable(Protocol):
    def pause(self) -> None: ...

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
        max_echo_likeness: float = 0.8,
        min_excess_db: float = 3.0,
        on_fact: Callable[[Fact], None] | None = None,
    ) -> None:
        self._output = output
        self._clock = clock
        self.min_speech_ms = min_speech_ms
        self.resolve_window_ms = resolve_window_ms
        self.max_echo_suppression_db = max_echo_suppression_db
        self.max_echo_likeness = max_echo_likeness
        self.min_excess_db = min_excess_db
        self._on_fact = on_fact
        self._armed = False
        self._pending: BargeIn | None = None  # fired, not yet resolved

    @property
    def armed(self) -> bool:
        return self._armed

    def arm(self) -> None:
        """The assistant is thinking or speaking: interruptions count from now."""
        self._armed = True

    def disarm(self) -> None:
        self._armed = False
        self._pending = None

    def ready(self, voiced_ms: float) -> bool:
        """Would `voiced_ms` of speech fire now, echo aside? (Lets the caller skip measuring the echo.)"""
        return self._armed and self._pending is None and voiced_ms + 1e-6 >= self.min_speech_ms

    def advance(self, audio_time: float, voiced_ms: float, echo: EchoEvidence = NO_ECHO) -> BargeIn | None:
        """The VAD has judged audio up to `audio_time` and hears `voiced_ms` of unbroken speech: fire once it
        lasts the minimum (a lone blip does not) and the stretch is not the assistant's own voice: the echo
        canceller removed no more than `max_echo_suppression_db` from it, what is left does not follow the
        played signal (a canceller still converging), and the microphone is louder than the echo alone would
        make it (a canceller thrown off by a jump in the playback timeline)."""
        if not self.ready(voiced_ms) or self._is_echo(echo):
            return None
        return self._fire(BargeIn(audio_time - voiced_ms / 1000.0, "vad", audio_time))

    def _is_echo(self, echo: EchoEvidence) -> bool:
        return (
            echo.suppressed_db > self.max_echo_suppression_db
            or echo.likeness > self.max_echo_likeness
            or (echo.excess_db is not None and echo.excess_db < self.min_excess_db)
        )

    def push_to_talk(self, at: float | None = None) -> BargeInConfirmed | None:
        """A push-to-talk press: while armed it interrupts at once, no resolve step."""
        if not self._armed:
            return None
        now = self._clock.now()
        self._output.pause()
        pressed = at if at is not None else now
        self._emit(BargeIn(pressed, "push_to_talk", now))
        return self._confirm(BargeIn(pressed, "push_to_talk", now))

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

    def _fire(self, barge_in: BargeIn) -> BargeIn:
        self._output.pause()
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
