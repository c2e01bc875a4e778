"""One behaviour set over both speakers: the sounddevice Player (real PulseAudio) and the RecordingSink fixture
(virtual clock). The cursor, pause/resume, stop and late segments behave the same."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass

import numpy as np
import pytest

from adapters.runtime.clock import SystemClock
from audio.fixtures import RecordingSink
from audio.player import Player
from audio.ports import AudioSink
from engine.testing.clock import VirtualClock
from tests.audio.signals import tone

pytestmark = pytest.mark.anyio


@dataclass
class Harness:
    sink: AudioSink
    sleep: Callable[[float], Awaitable[None]]
    tolerance_ms: float
    now: Callable[[], float]


@asynccontextmanager
async def _harness(kind: str, request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    flow: AbstractAsyncContextManager[None]
    sink: AudioSink
    if kind == "fixture":
        clock = VirtualClock()
        sink, flow, tolerance = RecordingSink(clock, latency_s=0.03), clock.autojump(), 1.0
        sleep, now = clock.sleep, clock.now
    else:
        request.getfixturevalue("pulse")
        sink, flow, tolerance = Player("pulse"), nullcontext(), 25.0
        sleep, now = SystemClock().sleep, SystemClock().now
    async with flow:
        await sink.start()
        try:
            yield Harness(sink, sleep, tolerance, now)
        finally:
            await sink.close()


KINDS = ["fixture", pytest.param("real", marks=pytest.mark.slow)]


@pytest.mark.parametrize("kind", KINDS)
async def test_segments_play_in_order_and_drain_when_heard(kind: str, request: pytest.FixtureRequest) -> None:
    async with _harness(kind, request) as h:
        rate = h.sink.rate
        h.sink.enqueue(7, 0, tone(0.3, rate))
        h.sink.enqueue(7, 1, (tone(0.2, 16000) * 32767).astype(np.int16), rate=16000)  # Piper-style int16
        await h.sink.drain(7)
        progress = h.sink.progress(7)
        assert [p.played_ms for p in progress.values()] == pytest.approx([300.0, 200.0], abs=1.0)
        assert h.sink.played_ms(7, 0) == pytest.approx(300.0, abs=1.0)


@pytest.mark.parametrize("kind", KINDS)
async def test_pause_holds_the_cursor_and_resume_goes_on(kind: str, request: pytest.FixtureRequest) -> None:
    async with _harness(kind, request) as h:
        h.sink.enqueue(3, "a", tone(0.6, h.sink.rate))
        await h.sleep(0.25)
        asked = h.now()
        silent = h.sink.pause()
        held = h.sink.progress(3)["a"].handed_ms  # the device plays out what it holds, nothing more
        assert 0.0 <= silent - asked <= h.sink.latency_s + 2 * h.sink.block_s, "silent once its buffer played"
        await h.sleep(0.2)
        assert h.sink.played_ms(3, "a") == pytest.approx(held, abs=1.0), "paused: nothing more is heard"
        assert 0.0 < held < 600.0
        h.sink.resume()
        await h.sink.drain(3)
        assert h.sink.played_ms(3, "a") == pytest.approx(600.0, abs=1.0), "every sample is heard exactly once"


@pytest.mark.parametrize("kind", KINDS)
async def test_stop_reports_the_heard_part_and_drops_late_segments(kind: str, request: pytest.FixtureRequest) -> None:
    async with _harness(kind, request) as h:
        rate = h.sink.rate
        h.sink.enqueue(5, "a", tone(0.2, rate))
        h.sink.enqueue(5, "b", tone(1.0, rate))
        h.sink.enqueue(6, "next", tone(0.1, rate))
        await h.sleep(0.4)
        heard = h.sink.stop(5)
        assert heard["a"] == pytest.approx(200.0, abs=1.0)
        assert 0.0 < heard["b"] < 1000.0
        assert not h.sink.enqueue(5, "c", tone(0.1, rate)), "a stopped turn takes no more audio"
        assert h.sink.played_ms(5, "b") == pytest.approx(heard["b"], abs=1.0), "what the device holds counts at once"
        await h.sleep(0.1)
        assert h.sink.played_ms(5, "b") == pytest.approx(heard["b"], abs=1.0), "silent at once, cursor exact"
        await h.sink.drain(6)
        assert h.sink.played_ms(6, "next") == pytest.approx(100.0, abs=1.0), "the next turn still plays"
        h.sink.release(5)
        assert h.sink.progress(5) == {}
