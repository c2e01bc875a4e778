"""The engine's SpeechOutput made real: chunker → Piper → speaker, with the heard cursor per segment."""

from __future__ import annotations

import collections
import itertools
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field

import anyio

from adapters.contract import CancelSignal
from adapters.contract.clock import Clock
from adapters.contract.speech_io import Synthesizer, SynthSegment, WordTiming
from adapters.tts.chunker import SpeechChunker
from adapters.tts.tail import trim_head, trim_tail
from audio.own_voice import TimedWord
from audio.ports import AudioSink
from engine.speech import SpeechKey, SpokenSegment

HISTORY_S = 15.0  # how long played words are kept once their turn ended (the echo tail is far shorter)


@dataclass
class _Spoken:
    key: SpeechKey
    segment: int
    text: str
    words: tuple[WordTiming, ...]
    duration_ms: float
    estimated: bool


@dataclass(eq=False)
class _Prepared:
    """A reply's first segment synthesized before its turn: `pieces` stays None if it was not finished."""

    text: str
    synth: Synthesizer
    done: anyio.Event = field(default_factory=anyio.Event)
    pieces: list[SynthSegment] | None = None


@dataclass
class _Turn:
    chunkers: dict[SpeechKey, SpeechChunker] = field(default_factory=dict)
    spoken: list[_Spoken] = field(default_factory=list)
    silenced: bool = False
    first_text_at: float | None = None
    first_audio_at: float | None = None


class VoiceOutput:
    """Speaks each turn's text as it streams; the first clause goes out as soon as it is complete.

    `on_first_audio(turn, queued_at, synth_ms)` reports when a turn's first audio reached the speaker's queue.
    """

    def __init__(
        self,
        synthesizer: Synthesizer,
        sink: AudioSink,
        clock: Clock,
        on_first_audio: Callable[[int, float, float], None] | None = None,
    ) -> None:
        self._synth = synthesizer
        self._sink = sink
        self._clock = clock
        self._on_first_audio = on_first_audio
        self._turns: dict[int, _Turn] = {}
        self._history: collections.deque[TimedWord] = collections.deque()  # words of released turns
        self._first_heard: dict[int, float] = {}  # of released turns
        self._ids = itertools.count(1)
        self._prepared: _Prepared | None = None  # the latest reply opening synthesized ahead of its turn

    def use(self, synthesizer: Synthesizer) -> None:
        """Speak with another voice from the next phrase on (the app switches between turns)."""
        self._synth = synthesizer

    async def prepare(self, text: str, signal: CancelSignal, *, whole: bool = False) -> bool:
        """Synthesize the first segment of a reply generated ahead (engine.speech.PreparesSpeech); a turn whose first
        segment is the same text plays it instead of synthesizing it again."""
        chunker = SpeechChunker(first_phrase=True)
        first = [*chunker.feed(text), *(chunker.flush() if whole else [])][:1]
        if not first or signal.cancelled:
            return False
        prepared = self._prepared = _Prepared(first[0].text, self._synth)
        try:
            pieces = [piece async for piece in self._synth.stream([prepared.text], signal)]
            if not signal.cancelled:
                prepared.pieces = pieces
        finally:
            prepared.done.set()
        return prepared.pieces is not None

    async def say(self, key: SpeechKey, text: str, signal: CancelSignal) -> None:
        state = self._turns.setdefault(key.turn, _Turn())
        if state.silenced or signal.cancelled:
            return
        if state.first_text_at is None:
            state.first_text_at = self._clock.now()
        chunker = state.chunkers.setdefault(key, SpeechChunker(first_phrase=True))
        for segment in chunker.feed(text):
            await self._speak(state, key, segment.text, signal, phrase=segment.phrase)

    async def drain(self, turn: int, signal: CancelSignal) -> None:
        state = self._turns.setdefault(turn, _Turn())
        for key, chunker in list(state.chunkers.items()):
            for segment in chunker.flush():
                await self._speak(state, key, segment.text, signal, phrase=segment.phrase)
        if not state.silenced:
            await self._sink.drain(turn)

    def discard(self, key: SpeechKey) -> None:
        state = self._turns.get(key.turn)
        if state is None:
            return
        state.chunkers.pop(key, None)
        self._sink.discard(key.turn, [s.segment for s in state.spoken if s.key == key])

    def silence(self, turn: int) -> None:
        self._turns.setdefault(turn, _Turn()).silenced = True
        self._sink.stop(turn)

    def report(self, turn: int) -> tuple[SpokenSegment, ...]:
        state = self._turns.get(turn)
        if state is None:
            return ()
        played = self._sink.played_ms
        return tuple(
            SpokenSegment(s.key, n, s.text, s.words, s.duration_ms, played(turn, s.segment), s.estimated)
            for n, s in enumerate(state.spoken)
        )

    def release(self, turn: int) -> None:
        first = self.first_heard_at(turn)
        state = self._turns.pop(turn, None)
        if state is not None:
            self._history.extend(self._played(turn, state))  # its echo may still be heard after the turn
            self._forget_old_words()
        if first is not None:
            self._first_heard[turn] = first
        self._sink.release(turn)

    def first_heard_at(self, turn: int) -> float | None:
        """When the turn's first sample was (or, rendered already, will be) audible, by the device's own clock:
        later than queueing + latency when the output was late. None until it has been rendered."""
        if turn in self._first_heard:
            return self._first_heard[turn]
        state = self._turns.get(turn)
        if state is None or not state.spoken:
            return None
        return self._sink.audible_at(turn, state.spoken[0].segment, 0.0)

    def played_words(self, since: float) -> list[TimedWord]:
        """Every word whose audio started being audible at `since` or later (clock seconds), in order: what
        Parley was saying, for telling its echo from the user's words."""
        self._forget_old_words()
        live = [w for turn, state in self._turns.items() for w in self._played(turn, state)]
        return sorted((w for w in [*self._history, *live] if w.start >= since), key=lambda w: w.start)

    def _forget_old_words(self) -> None:
        """Bounded by time whether or not anyone asks (push-to-talk never does)."""
        while self._history and self._history[0].start < self._clock.now() - HISTORY_S:
            self._history.popleft()

    def _played(self, turn: int, state: _Turn) -> list[TimedWord]:
        words = []
        for spoken in state.spoken:
            for word in spoken.words:
                start = self._sink.audible_at(turn, spoken.segment, word.start_ms)
                if start is not None:
                    end = self._sink.audible_at(turn, spoken.segment, max(word.start_ms, word.end_ms - 1))
                    words.append(TimedWord(spoken.text[word.start : word.end], start, end or start))
        return words

    async def _speak(
        self, state: _Turn, key: SpeechKey, source: str, signal: CancelSignal, *, phrase: bool = False
    ) -> None:
        """`phrase`: the source ends inside a sentence (the chunker's first phrase), so its closing quiet is cut; the
        turn's first audio loses the quiet Piper opens with, which would only make the user wait."""
        async with aclosing(self._pieces(state, source, signal)) as pieces:
            async for piece in pieces:
                if state.silenced or signal.cancelled or not self._play(state, key, piece, phrase=phrase):
                    return

    def _play(self, state: _Turn, key: SpeechKey, piece: SynthSegment, *, phrase: bool) -> bool:
        """Queue one synthesized piece; False when the turn was stopped."""
        synth = trim_tail(piece) if phrase else piece
        synth = trim_head(synth) if not state.spoken else synth
        segment = next(self._ids)
        if not self._sink.enqueue(key.turn, segment, synth.audio, synth.sample_rate):
            return False
        state.spoken.append(_Spoken(key, segment, synth.text, synth.words, synth.duration_ms, synth.estimated))
        if state.first_audio_at is None:
            state.first_audio_at = self._clock.now()
            if self._on_first_audio is not None and state.first_text_at is not None:
                synth_ms = (state.first_audio_at - state.first_text_at) * 1000
                self._on_first_audio(key.turn, state.first_audio_at, synth_ms)
        return True

    async def _pieces(self, state: _Turn, source: str, signal: CancelSignal) -> AsyncGenerator[SynthSegment, None]:
        """The turn's first segment from its synthesis made ahead, if that was of the same text by the same voice."""
        prepared = self._prepared
        if not state.spoken and prepared is not None and (prepared.text, prepared.synth) == (source, self._synth):
            self._prepared = None
            await prepared.done.wait()  # under way: one synthesis step
            if prepared.pieces is not None:
                for piece in prepared.pieces:
                    yield piece
                return
        async for piece in self._synth.stream([source], signal):
            yield piece
