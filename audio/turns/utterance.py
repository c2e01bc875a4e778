"""One utterance as Ears hears it: its audio and running transcript, its end-of-turn policy, and the work started
on each pause (the end-of-turn model, the speculative final pass, the speculative prefill), dropped together if
the user goes on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from adapters.asr.incremental import IncrementalTranscriber
from adapters.contract import CancelSignal, Hook
from adapters.contract.speech_io import Transcript
from adapters.contract.turn import EndOfTurnModel
from audio.turns.endpoint import EndpointConfig, EndpointPolicy
from audio.turns.ports import Prefill
from audio.turns.words import says_something
from engine.inbox import UserInput

RESUMED = Hook("the user went on")
WORDS, MODEL = "words", "model"  # the kinds of pause work: the speculative final pass (and prefill), the model


@dataclass(frozen=True)
class TurnTaking:
    """How the end of a turn is decided: the policy's settings and the end-of-turn model (None: words and silence)."""

    config: EndpointConfig
    model: EndOfTurnModel | None


class PauseWork:
    """The work started on one pause; `drop()` cancels it all (its scopes absorb the cancellation, its threads are
    awaited by the tasks that started them) and sets its signal for the adapters."""

    def __init__(self, number: int, since: float) -> None:
        self.number = number
        self.since = since  # clock time at which the silence began
        self.signal = CancelSignal()
        self.words: Transcript | None = None  # the speculative final pass
        self.words_at: float | None = None
        self.asr_ms: float | None = None
        self.speculation: Prefill | None = None
        self.passed = anyio.Event()  # the final pass has ended (with words or not)
        self.pass_began_early = False  # the final pass was under way when the pause opened (begun at its silence)
        self.dropped = False
        self._scopes: dict[anyio.CancelScope, str] = {}

    async def run(self, kind: str, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """`fn(*args)` as this pause's work of `kind`: it ends (and is not an error) when the pause is dropped."""
        if self.dropped:
            return
        with anyio.CancelScope() as scope:
            self._scopes[scope] = kind
            try:
                await fn(*args)
            finally:
                del self._scopes[scope]

    def cancel(self, kind: str) -> None:
        """End this pause's work of `kind` only (an adapter sees a cancelled task; its thread is awaited)."""
        for scope, of in list(self._scopes.items()):
            if of == kind:
                scope.cancel()

    def drop(self) -> None:
        self.dropped = True
        for scope in list(self._scopes):
            scope.cancel()
        self.signal.set(RESUMED)
        if self.speculation is not None:
            self.speculation.drop()


@dataclass
class Utterance:
    """Speech from onset to the decided end of the turn (or push-to-talk release)."""

    started_at: float
    transcript: IncrementalTranscriber
    policy: EndpointPolicy | None  # None: push-to-talk (the release ends it)
    audio_start: float = 0.0  # clock time of the first sample its transcript reads (the pre-roll's start)
    signal: CancelSignal = field(default_factory=CancelSignal)
    pause: PauseWork | None = None
    ended: Transcript | None = None
    done: bool = False  # its final transcript is known (or it was dropped)
    over: bool = False  # its end is decided; no more speech belongs to it
    submitted: UserInput | None = None  # the input its words became
    generation: int = 0  # how often the person went on after its end was decided
    _waiting: anyio.CancelScope | None = None

    @property
    def push_to_talk(self) -> bool:
        return self.policy is None

    def hands_over(self) -> None:
        """Push-to-talk took over: the release ends it, the policy no longer does."""
        self.policy = None
        self.drop_pause()
        self.poke()

    def reopen(self) -> None:
        """The person went on after its end was decided: it is under way again, its earlier ending void."""
        self.generation += 1
        self.over = self.done = False
        self.ended, self.submitted = None, None
        self.drop_pause()
        self.transcript.reopen()

    def drop_pause(self) -> None:
        if self.pause is not None:
            self.pause.drop()
            self.pause = None

    def heard_nothing(self) -> bool:
        """The final pass at the current pause (or the final transcript) holds no words."""
        final = self.ended or (self.pause.words if self.pause is not None else None)
        return final is not None and not says_something(final)

    async def wait(self, until: float | None, sleep: Callable[[float], Awaitable[None]], now: float) -> None:
        """Sleep until clock time `until` (None: indefinitely), or until `poke()`."""
        with anyio.CancelScope() as scope:
            self._waiting = scope
            try:
                if until is None:
                    await anyio.Event().wait()  # qasync has no timer for an endless sleep
                else:
                    await sleep(until - now)
            finally:
                self._waiting = None

    def poke(self) -> None:
        """Something changed: whoever waits in `wait` looks again."""
        if self._waiting is not None:
            self._waiting.cancel()
