"""The engine's port to the voice: text goes in as it streams, a report of what was heard comes back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from adapters.contract import CancelSignal
from adapters.contract.speech_io import WordTiming

__all__ = ["PreparesSpeech", "SpeechKey", "SpeechOutput", "SpokenSegment", "WordTiming"]


@dataclass(frozen=True)
class SpeechKey:
    """Which turn, step and provider attempt a piece of spoken text belongs to."""

    turn: int
    step: int
    attempt: int


@dataclass(frozen=True)
class SpokenSegment:
    """One synthesized segment and how much of its audio actually reached the listener."""

    key: SpeechKey
    index: int
    text: str
    words: tuple[WordTiming, ...]
    duration_ms: float
    played_ms: float
    estimated: bool = False


class SpeechOutput(Protocol):
    """Speaks a turn's text and keeps the cursor of what was heard.

    Everything is keyed by turn id; text or audio for a silenced turn is dropped.
    """

    async def say(self, key: SpeechKey, text: str, signal: CancelSignal) -> None:
        """Queue streamed text; it is segmented, synthesized and played in order."""
        ...

    async def drain(self, turn: int, signal: CancelSignal) -> None:
        """Return once everything queued for `turn` has been played out."""
        ...

    def discard(self, key: SpeechKey) -> None:
        """Drop the not-yet-played audio of one failed attempt; the turn goes on."""
        ...

    def silence(self, turn: int) -> None:
        """Stop the turn's audio now (within one audio block); later text and audio are dropped."""
        ...

    def report(self, turn: int) -> tuple[SpokenSegment, ...]:
        """What was spoken for `turn`, segment by segment, with the ms actually heard."""
        ...

    def release(self, turn: int) -> None:
        """Forget the turn's bookkeeping once it has ended."""
        ...


@runtime_checkable
class PreparesSpeech(Protocol):
    """An output that can synthesize a reply's opening while the turn is still being decided, so that its first
    audio waits for no synthesis once it is (engine.ahead)."""

    async def prepare(self, text: str, signal: CancelSignal, *, whole: bool = False) -> bool:
        """`text`: the reply generated ahead so far (`whole`: all of it). Once its first segment is complete,
        synthesize it, to be played only by a turn whose first segment is the same text. True once it is ready
        (later calls need not be made); False while it is incomplete, or once `signal` fired."""
        ...
