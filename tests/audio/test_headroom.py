"""Parley's voice never reaches full scale at the speaker: Piper normalises every sentence to full scale and a
resampler overshoots it, so the sink turns a segment down to -1 dBFS before the device gets it."""

from __future__ import annotations

import numpy as np
import pytest

from adapters.contract.cancel import CancelSignal
from audio.fixtures import RecordingSink
from audio.levels import CEILING, within_ceiling
from engine.testing.clock import VirtualClock

pytestmark = pytest.mark.anyio

DEVICE_RATE = 48_000  # a usual device rate: Piper's 22.05 kHz is resampled on the way, as on a real device
PIPER_RATE = 22_050


async def _played(segments: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """What a speaker at DEVICE_RATE records of `segments` (samples, rate) queued as one reply."""
    clock = VirtualClock()
    sink = RecordingSink(clock, rate=DEVICE_RATE)
    async with clock.autojump():
        await sink.start()
        try:
            for n, (samples, rate) in enumerate(segments):
                assert sink.enqueue(1, n, samples, rate=rate)
            await sink.drain(1)
        finally:
            await sink.close()
    return sink.recording()


def _full_scale_square(seconds: float) -> np.ndarray:
    """The loudest int16 a synthesizer can give: a square wave at ±32767, whose resampled edges overshoot."""
    t = np.arange(round(seconds * PIPER_RATE)) / PIPER_RATE
    return np.where(np.sin(2 * np.pi * 300 * t) >= 0, 32767, -32767).astype(np.int16)


async def test_a_full_scale_segment_plays_below_the_ceiling_and_is_not_silenced() -> None:
    loud = _full_scale_square(0.3)
    played = await _played([(loud, PIPER_RATE)])
    peak = float(np.max(np.abs(played)))
    assert peak <= CEILING + 1e-6, f"peak {20 * np.log10(peak):.2f} dBFS"
    assert peak >= CEILING - 1e-3, "turned down to the ceiling, no further"
    assert np.count_nonzero(np.abs(played) >= 0.999) == 0


def test_audio_under_the_ceiling_is_left_as_it_is() -> None:
    quiet = np.linspace(-0.5, 0.5, 1000, dtype=np.float32)
    assert within_ceiling(quiet) is quiet
    loud = quiet * np.float32(2.4)
    turned = within_ceiling(loud)
    assert float(np.max(np.abs(turned))) == pytest.approx(CEILING, rel=1e-6)
    assert float(np.max(np.abs(loud))) == pytest.approx(1.2, rel=1e-6), "the caller's samples are not changed"


@pytest.mark.slow
async def test_real_piper_speech_never_reaches_full_scale_on_the_speaker() -> None:
    from adapters.tts.piper_voice import PiperSynthesizer

    text = ["Hello! This is Parley, speaking as loudly as it ever will.", "Wow, what a day!"]
    segments = [s async for s in PiperSynthesizer().stream(text, CancelSignal())]
    assert max(int(np.max(np.abs(s.audio.astype(np.int32)))) for s in segments) >= 32000, "Piper gives full scale"
    played = await _played([(s.audio, s.sample_rate) for s in segments])
    assert float(np.max(np.abs(played))) <= CEILING + 1e-6
    assert np.count_nonzero(np.abs(played) >= 0.999) == 0
