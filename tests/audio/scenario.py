"""One barge-in scenario for both worlds: real PulseAudio devices with a loopback, and fixture devices with an
echo mixer on a virtual clock. The assistant speaks; the microphone hears it back (loudspeaker echo); a user may
talk over it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import numpy as np

from adapters.contract.clock import Clock
from audio.aec import EchoCanceller
from audio.bargein import BargeInDetector
from audio.events import BargeIn, CaptureFailed
from audio.listen import Listener, ListenEvent
from audio.ports import RATE, AudioSink, AudioSource, Frame
from audio.vad import Vad, VadConfig
from tests.audio.signals import offset_of


@dataclass
class Rig:
    clock: Clock
    source: AudioSource
    sink: AudioSink
    inject_user: Callable[[], Awaitable[None]]  # start the user's utterance (user.wav) now
    wait: Callable[[Callable[[], bool], float], Awaitable[None]]  # until condition, at most seconds


@dataclass
class Outcome:
    events: list[ListenEvent] = field(default_factory=list)
    received_at: dict[int, float] = field(default_factory=dict)  # id(event) -> clock time it reached us
    raw: list[Frame] = field(default_factory=list)
    clean: list[Frame] = field(default_factory=list)
    tap: object = None

    @property
    def barge_ins(self) -> list[BargeIn]:
        return [e for e in self.events if isinstance(e, BargeIn)]

    def raw_audio(self) -> np.ndarray:
        return np.concatenate([f.samples for f in self.raw]) if self.raw else np.zeros(0, dtype=np.float32)

    def clean_audio(self) -> np.ndarray:
        return np.concatenate([f.samples for f in self.clean]) if self.clean else np.zeros(0, dtype=np.float32)

    def time_of(self, position: int) -> float:
        """Clock time of a raw-capture sample index."""
        first = self.raw[0].position
        for frame in self.raw:
            if frame.position - first + len(frame.samples) > position:
                return frame.at + (position - (frame.position - first)) / RATE
        raise ValueError(position)

    def onset_of(self, clip: np.ndarray) -> float:
        """When `clip` started to sound in the capture (cross-correlation), at its first loud sample."""
        lead = int(np.nonzero(np.abs(clip) > 0.02)[0][0])
        return self.time_of(offset_of(self.raw_audio(), clip) + lead)


class _Tee:
    """A source wrapper keeping the raw frames for analysis."""

    def __init__(self, source: AudioSource, outcome: Outcome) -> None:
        self._source = source
        self._outcome = outcome

    @property
    def dropped(self) -> int:
        return self._source.dropped

    async def start(self) -> None:
        return None

    async def frames(self):  # type: ignore[no-untyped-def]
        async for item in self._source.frames():
            if isinstance(item, Frame):
                self._outcome.raw.append(item)
            yield item

    async def close(self) -> None:
        return None


async def speak_and_listen(
    rig: Rig,
    speech: np.ndarray,
    *,
    aec: bool,
    seconds: float,
    user_at: float | None = None,
    stop_on_barge_in: bool = False,
) -> Outcome:
    """The assistant says `speech` (16 kHz) while the listener runs for `seconds` of capture."""
    outcome = Outcome()
    detector = BargeInDetector(rig.sink, rig.clock, min_speech_ms=64)
    tap = rig.sink.tap()
    outcome.tap = tap
    listener = Listener(_Tee(rig.source, outcome), Vad(VadConfig(min_speech_ms=32)),
                        echo=EchoCanceller(tap, enabled=aec), barge_in=detector)  # fmt: skip

    def on_event(event: ListenEvent) -> None:
        outcome.received_at[id(event)] = rig.clock.now()
        outcome.events.append(event)
        assert not isinstance(event, CaptureFailed), event

    task = asyncio.create_task(listener.run(on_event, outcome.clean.append))
    try:
        await rig.wait(lambda: len(outcome.raw) >= 10, 5.0)  # the microphone runs
        detector.arm()
        rig.sink.enqueue(1, "speech", speech, rate=RATE)
        started = rig.clock.now()
        if user_at is not None:
            await rig.wait(lambda: rig.clock.now() >= started + user_at, user_at + 5.0)
            await rig.inject_user()
        await rig.wait(lambda: rig.clock.now() >= started + seconds or (stop_on_barge_in and bool(outcome.barge_ins)),
                       seconds + 5.0)  # fmt: skip
    finally:
        rig.sink.stop(1)
        rig.sink.release(1)
        await rig.source.close()
        await task
    return outcome


def real_wait(clock: Clock) -> Callable[[Callable[[], bool], float], Awaitable[None]]:
    async def wait(condition: Callable[[], bool], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.01)

    return wait


def virtual_wait(clock: Clock) -> Callable[[Callable[[], bool], float], Awaitable[None]]:
    async def wait(condition: Callable[[], bool], seconds: float) -> None:
        deadline = clock.now() + seconds
        while not condition():
            assert clock.now() < deadline, "timed out (virtual)"
            await clock.sleep(0.01)

    return wait
