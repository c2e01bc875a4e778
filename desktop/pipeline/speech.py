"""The engine's speech port over Piper and the speaker, falling back to silent, timed speech when either fails."""

from __future__ import annotations

from collections.abc import Callable

from adapters.contract import CancelSignal
from engine.silent_speech import SilentSpeech
from engine.speech import PreparesSpeech, SpeechKey, SpeechOutput, SpokenSegment

SIMULATED_MS_PER_WORD = 260.0


class FallbackSpeech:
    """Speaks through `live` while `usable()` holds, else silently (shown and timed as if spoken, so a reply can
    still be interrupted). Chosen per turn at its first call, so a turn never changes speaker half way."""

    def __init__(self, live: SpeechOutput, silent: SilentSpeech, usable: Callable[[], bool]) -> None:
        self.live, self.silent = live, silent
        self._usable = usable
        self._turns: dict[int, SpeechOutput] = {}

    def _for(self, turn: int) -> SpeechOutput:
        if turn not in self._turns:
            self._turns[turn] = self.live if self._usable() else self.silent
        return self._turns[turn]

    async def prepare(self, text: str, signal: CancelSignal, *, whole: bool = False) -> bool:
        """Only the live voice synthesizes ahead; a turn that will be silent has nothing to prepare."""
        if isinstance(self.live, PreparesSpeech) and self._usable():
            return await self.live.prepare(text, signal, whole=whole)
        return True

    async def say(self, key: SpeechKey, text: str, signal: CancelSignal) -> None:
        await self._for(key.turn).say(key, text, signal)

    async def drain(self, turn: int, signal: CancelSignal) -> None:
        await self._for(turn).drain(turn, signal)

    def discard(self, key: SpeechKey) -> None:
        self._for(key.turn).discard(key)

    def silence(self, turn: int) -> None:
        self._for(turn).silence(turn)

    def report(self, turn: int) -> tuple[SpokenSegment, ...]:
        return self._for(turn).report(turn)

    def release(self, turn: int) -> None:
        speech = self._turns.pop(turn, None)
        if speech is not None:
            speech.release(turn)
