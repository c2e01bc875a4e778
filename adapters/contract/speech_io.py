"""The speech adapter contract: audio in, a transcript out; text in, a stream of timed audio segments out.

Adapters report facts (words, timings, probabilities) and decide nothing. Both kinds honour the
turn's cancel signal within one step (one Whisper segment, one Piper sentence) and return only
once their worker thread has returned (SPEC §5).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from adapters.contract.cancel import CancelSignal

ASR_SAMPLE_RATE = 16_000

Samples = npt.NDArray[np.float32]
Pcm16 = npt.NDArray[np.int16]


@dataclass(frozen=True)
class Word:
    """One recognised word and where it lies in the input audio (seconds from its start)."""

    text: str
    start_s: float
    end_s: float
    probability: float


@dataclass(frozen=True)
class Transcript:
    """What the recogniser heard; `words` is empty for silence and noise."""

    text: str
    words: tuple[Word, ...]
    no_speech_prob: float
    language: str
    duration_s: float
    rejected: str = ""  # why the recogniser gave no words for sound it heard ("too quiet", "no speech"...)

    @property
    def empty(self) -> bool:
        return not self.words


class Transcriber(Protocol):
    """Speech to text. Cancelled work raises `asyncio.CancelledError` after its thread returned."""

    @property
    def sample_rate(self) -> int:
        """The rate the model wants; other rates are resampled."""
        ...

    async def transcribe(
        self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE
    ) -> Transcript:
        """Mono float samples in [-1, 1] to a transcript; raises CancelledError once `signal` fires."""
        ...


@dataclass(frozen=True)
class WordTiming:
    """A spoken word: characters `[start, end)` of the segment's source text and its span in the segment audio.

    The engine's heard-text accounting uses this very type (`engine.speech` re-exports it).
    """

    start: int
    end: int
    start_ms: float
    end_ms: float


@dataclass(frozen=True, eq=False)
class SynthSegment:
    """One synthesized piece of text: its exact source slice, its audio, and where each word sounds."""

    index: int
    text: str
    audio: Pcm16
    sample_rate: int
    words: tuple[WordTiming, ...]
    estimated: bool = False

    @property
    def duration_ms(self) -> float:
        return 1000.0 * len(self.audio) / self.sample_rate


SpeechText = str | Iterable[str] | AsyncIterable[str]


class Synthesizer(Protocol):
    """Text to timed audio, one segment at a time, lazily (nothing is synthesized ahead of the consumer).

    A plain `str` is split into sentences; each item of an iterable is one segment (split further
    only if it is longer than the adapter's bound). Text with nothing speakable yields no segment.
    When `signal` fires the stream stops after the current step and simply ends.
    """

    @property
    def sample_rate(self) -> int: ...

    def stream(self, text: SpeechText, signal: CancelSignal) -> AsyncIterator[SynthSegment]: ...
