"""Shared shapes: the system clock, a captured frame, the source and sink protocols."""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np

from adapters.runtime.workers import run_blocking
from audio.events import CaptureFailed, PlaybackFailed

__all__ = [
    "RATE",
    "AudioSink",
    "AudioSource",
    "Frame",
    "Paced",
    "SegmentProgress",
    "run_blocking",
]

RATE = 16000  # what VAD, AEC and ASR consume: 16 kHz mono float32
SegmentId = Hashable
T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Frame:
    """Mono float32 samples at RATE; `at` is the clock time of the first sample, `position` its stream index."""

    samples: np.ndarray
    at: float
    position: int

    @property
    def end(self) -> float:
        return self.at + len(self.samples) / RATE


@dataclass(frozen=True)
class SegmentProgress:
    duration_ms: float
    handed_ms: float  # given to the device (it will be heard unless the device fails)
    played_ms: float  # reached the DAC by now


class AudioSource(Protocol):
    """A microphone: 16 kHz mono frames in order, or a CaptureFailed as the last item."""

    @property
    def dropped(self) -> int: ...

    async def start(self) -> None: ...

    def frames(self) -> AsyncIterator[Frame | CaptureFailed]: ...

    async def close(self) -> None: ...


@runtime_checkable
class Paced(Protocol):
    """A source that can hand over its frames a few at a time while nobody needs them at once (a silent room)."""

    def pace(self, frames: int) -> None: ...


class ReferenceReader(Protocol):
    def read(self, at: float, n: int) -> np.ndarray: ...

    @property
    def underrun_at(self) -> float | None:
        """Clock time of the output's latest underrun (None: none yet), after which the echo may come later."""
        ...


class AudioSink(Protocol):
    """A speaker with the heard cursor, keyed by turn and segment."""

    @property
    def rate(self) -> int: ...

    @property
    def failure(self) -> PlaybackFailed | None: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def tap(self) -> ReferenceReader: ...

    def enqueue(self, turn: int, segment: SegmentId, samples: np.ndarray, rate: int | None = None) -> bool: ...

    def stop(self, turn: int) -> dict[SegmentId, float]: ...

    def pause(self) -> float: ...

    def resume(self) -> None: ...

    def played_ms(self, turn: int, segment: SegmentId) -> float: ...

    def audible_at(self, turn: int, segment: SegmentId, at_ms: float) -> float | None: ...

    def progress(self, turn: int) -> dict[SegmentId, SegmentProgress]: ...

    def discard(self, turn: int, segments: list[SegmentId]) -> None: ...

    def release(self, turn: int) -> None: ...

    async def drain(self, turn: int) -> None: ...
