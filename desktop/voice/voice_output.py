"""The engine's SpeechOutput made real: chunker → Piper → playback, keeping the heard cursor per segment."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Protocol

from adapters.contract import CancelSignal
from adapters.contract.speech_io import Pcm16, Synthesizer
from adapters.tts.chunker import SpeechChunker
from engine.clock import Clock
from engine.speech import SpeechKey, SpokenSegment, WordTiming

DRAIN_POLL_S = 0.01


class Playback(Protocol):
    """What the voice output needs from a speaker (a sounddevice stream or a recording sink)."""

    def enqueue(self, turn: int, segment: int, audio: Pcm16, sample_rate: int) -> None: ...

    def played_ms(self, turn: int, segment: int) -> float:
        """Audio of the segment that has reached the listener (device latency included)."""
        ...

    def stop(self, turn: int) -> None:
        """Silence the turn within one block; later audio of the turn is dropped."""
        ...

    def drop(self, turn: int, segments: frozenset[int]) -> None:
        """Forget queued audio of these segments (a failed attempt); the turn goes on."""
        ...

    def finished(self, turn: int) -> bool:
        """Everything queued for the turn has been played out."""
        ...


@dataclass
class _Spoken:
    key: SpeechKey
    segment: int
    text: str
    words: tuple[WordTiming, ...]
    duration_ms: float
    estimated: bool


@dataclass
class _Turn:
    chunkers: dict[SpeechKey, SpeechChunker] = field(default_factory=dict)
    spoken: list[_Spoken] = field(default_factory=list)
    silenced: bool = False
    first_audio_at: float | None = None


class VoiceOutput:
    """Speaks each turn's text as it streams; the first clause goes out as soon as it is complete."""

    def __init__(self, synthesizer: Synthesizer, playback: Playback, clock: Clock) -> None:
        self._synth = synthesizer
        self._playback = playback
        self._clock = clock
        self._turns: dict[int, _Turn] = {}
        self._ids = itertools.count(1)

    def first_audio_at(self, turn: int) -> float | None:
        """When the turn's first audio was handed to the speaker (engine clock)."""
        state = self._turns.get(turn)
        return state.first_audio_at if state else None

    async def say(self, key: SpeechKey, text: str, signal: CancelSignal) -> None:
        state = self._turns.setdefault(key.turn, _Turn())
        if state.silenced or signal.cancelled:
            return
        chunker = state.chunkers.setdefault(key, SpeechChunker())
        for segment in chunker.feed(text):
            await self._speak(state, key, segment.text, signal)

    async def drain(self, turn: int, signal: CancelSignal) -> None:
        state = self._turns.setdefault(turn, _Turn())
        for key, chunker in list(state.chunkers.items()):
            for segment in chunker.flush():
                await self._speak(state, key, segment.text, signal)
        while not state.silenced and not self._playback.finished(turn):
            await self._clock.sleep(DRAIN_POLL_S)

    def discard(self, key: SpeechKey) -> None:
        state = self._turns.get(key.turn)
        if state is None:
            return
        state.chunkers.pop(key, None)
        self._playback.drop(key.turn, frozenset(s.segment for s in state.spoken if s.key == key))

    def silence(self, turn: int) -> None:
        self._turns.setdefault(turn, _Turn()).silenced = True
        self._playback.stop(turn)

    def report(self, turn: int) -> tuple[SpokenSegment, ...]:
        state = self._turns.get(turn)
        if state is None:
            return ()
        return tuple(
            SpokenSegment(
                s.key, n, s.text, s.words, s.duration_ms, self._playback.played_ms(turn, s.segment), s.estimated
            )
            for n, s in enumerate(state.spoken)
        )

    def release(self, turn: int) -> None:
        self._turns.pop(turn, None)

    async def _speak(self, state: _Turn, key: SpeechKey, source: str, signal: CancelSignal) -> None:
        async for synth in self._synth.stream([source], signal):
            if state.silenced or signal.cancelled:
                return
            segment = next(self._ids)
            self._playback.enqueue(key.turn, segment, synth.audio, synth.sample_rate)
            if state.first_audio_at is None:
                state.first_audio_at = self._clock.now()
            state.spoken.append(_Spoken(key, segment, synth.text, synth.words, synth.duration_ms, synth.estimated))
