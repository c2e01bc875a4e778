"""Speech without a speaker: each `say` is a segment 'spoken' silently at a fixed rate per word on the clock.

The window uses it when there is no output device (replies are shown and timed as if spoken, so they can be
interrupted), `parley demo` to show the engine alone, and the tests as their speaker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from adapters.contract import CancelSignal
from adapters.contract.clock import Clock
from engine.speech import SpeechKey, SpokenSegment, WordTiming

_WORD = re.compile(r"\S+")


@dataclass
class _Playing:
    segment: SpokenSegment
    starts_at: float
    stopped_at: float | None = None


@dataclass
class _TurnAudio:
    queue: list[_Playing] = field(default_factory=list)
    silenced: bool = False
    space: str = ""  # whitespace said on its own (a model's " " before "56"), kept for the next segment


class SilentSpeech:
    """Plays segments back to back on the injected clock and reports exactly what time allowed to be heard."""

    def __init__(self, clock: Clock, *, ms_per_word: float = 300.0) -> None:
        self._clock = clock
        self._ms_per_word = ms_per_word
        self._turns: dict[int, _TurnAudio] = {}
        self._busy_until = clock.now()
        self.dropped: list[tuple[SpeechKey, str]] = []

    async def say(self, key: SpeechKey, text: str, signal: CancelSignal) -> None:
        audio = self._turns.setdefault(key.turn, _TurnAudio())
        if audio.silenced or signal.cancelled:
            if text.strip():
                self.dropped.append((key, text))
            return
        if not text.strip():
            audio.space += text
            return
        text, audio.space = audio.space + text, ""
        segment = self._segment(key, len(audio.queue), text)
        starts_at = max(self._clock.now(), self._busy_until)
        self._busy_until = starts_at + segment.duration_ms / 1000
        audio.queue.append(_Playing(segment, starts_at))

    async def drain(self, turn: int, signal: CancelSignal) -> None:
        audio = self._turns.get(turn)
        if audio and audio.queue:
            end = max(p.starts_at + p.segment.duration_ms / 1000 for p in audio.queue)
            await self._clock.sleep(end - self._clock.now())

    def discard(self, key: SpeechKey) -> None:
        audio = self._turns.get(key.turn)
        if audio is not None:
            self._stop(p for p in audio.queue if p.segment.key == key)

    def silence(self, turn: int) -> None:
        audio = self._turns.setdefault(turn, _TurnAudio())
        audio.silenced = True
        self._stop(audio.queue)

    def report(self, turn: int) -> tuple[SpokenSegment, ...]:
        audio = self._turns.get(turn)
        if audio is None:
            return ()
        return tuple(replace(p.segment, played_ms=self._played_ms(p)) for p in audio.queue)

    def release(self, turn: int) -> None:
        self._turns.pop(turn, None)

    def _stop(self, playing: Iterable[_Playing]) -> None:
        now = self._clock.now()
        for item in playing:
            if item.stopped_at is None:
                item.stopped_at = now
        self._busy_until = now

    def _played_ms(self, playing: _Playing) -> float:
        until = playing.stopped_at if playing.stopped_at is not None else self._clock.now()
        return min(max(0.0, (until - playing.starts_at) * 1000), playing.segment.duration_ms)

    def _segment(self, key: SpeechKey, index: int, text: str) -> SpokenSegment:
        words = []
        for n, match in enumerate(_WORD.finditer(text)):
            start_ms = n * self._ms_per_word
            words.append(WordTiming(match.start(), match.end(), start_ms, start_ms + self._ms_per_word))
        duration = len(words) * self._ms_per_word
        return SpokenSegment(key, index, text, tuple(words), duration, 0.0)
