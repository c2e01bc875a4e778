"""A reply's length limit, kept by the engine (which owns the stream), not by the provider's good will.

A provider that ignores `max_tokens`, or streams forever, is stopped here: once an attempt has been
streaming for `seconds`, or that much of its speech is queued, the attempt's own cancel signal is set.
The adapter closes its connection as it does on any cancel (SPEC §2.8) and the step completes with the
words already spoken. The attempt's signal is linked to the turn's, so a cancel of the turn reaches the
adapter at once, as before; the turn's signal itself is never set by the limit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

from adapters.contract import CancelCause, CancelSignal, Hook, Parent
from adapters.contract.clock import Clock
from adapters.runtime.tasks import open_tasks
from engine.speech import SpeechKey, SpokenSegment
from engine.turn import Turn

REPLY_LIMIT = "reply limit"  # the Hook reason on the attempt's signal when the limit closes a stream


class ReplyLimit:
    """The signal one attempt's stream gets, and whether the limit (not the user) ended it."""

    def __init__(self, turn_signal: CancelSignal, seconds: float | None) -> None:
        self.signal = CancelSignal()
        self.seconds = seconds
        self.reached = False
        self._turn_signal = turn_signal

    def reach(self) -> None:
        """Close the stream: the reply is long enough (a cancelled turn stays cancelled, not limited)."""
        if not self._turn_signal.cancelled and self.signal.set(Hook(REPLY_LIMIT)):
            self.reached = True

    def check_speech(self, segments: Iterable[SpokenSegment], key: SpeechKey) -> bool:
        """Reach the limit once the attempt's queued speech lasts `seconds`; True when reached."""
        if self.seconds is not None and not self.reached:
            queued_ms = sum(segment.duration_ms for segment in segments if segment.key == key)
            if queued_ms >= self.seconds * 1000:
                self.reach()
        return self.reached

    def follow(self, cause: CancelCause) -> None:
        """The turn was cancelled: so is its stream (the turn, not the limit, ended it)."""
        self.signal.set(Parent())


@asynccontextmanager
async def reply_limit(turn: Turn, clock: Clock, seconds: float | None) -> AsyncIterator[ReplyLimit]:
    """A limit for one attempt; its timer runs inside the turn's group and has ended when the block is left."""
    limit = ReplyLimit(turn.signal, seconds)
    unlink = turn.signal.on_cancel(limit.follow)
    try:
        async with open_tasks(cancel_on_exit=True) as tasks:
            if seconds is not None:
                tasks.start(_expire, clock, seconds, limit, name=f"turn{turn.id}:reply limit")
            yield limit
    finally:
        unlink()


async def _expire(clock: Clock, seconds: float, limit: ReplyLimit) -> None:
    await clock.sleep(seconds)
    limit.reach()
