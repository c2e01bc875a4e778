"""Real PortAudio devices on PulseAudio null sinks (SPEC §6): capture fidelity, stop-to-silence, heard cursor."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from audio.capture import Microphone
from audio.player import Player
from audio.ports import Frame
from desktop.bench.rows import STOP
from tests.audio import pulse as pulse_kit
from tests.audio.conftest import ASSISTANT_WAV
from tests.audio.signals import normalised_xcorr_peak, report, tone

STOP_TARGET_MS = STOP.limit  # SPEC: the speaker silent within this of the stop

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _poll(condition: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


async def test_a_wav_played_into_the_wire_is_captured_faithfully(
    pulse: pulse_kit.Pulse, assistant_speech: np.ndarray
) -> None:
    mic = Microphone("pulse")
    await mic.start()
    frames: list[Frame] = []

    async def collect() -> None:
        async for item in mic.frames():
            assert isinstance(item, Frame), item
            frames.append(item)

    task = asyncio.create_task(collect())
    try:
        await _poll(lambda: len(frames) >= 5, 5, "the microphone to deliver")
        player = pulse_kit.play_into(pulse_kit.MICWIRE, ASSISTANT_WAV, latency_ms=250)
        await asyncio.to_thread(player.wait, 30)
        settled = len(frames)
        await _poll(lambda: len(frames) >= settled + 15, 5, "the tail of the capture")
    finally:
        await mic.close()
        await task
    captured = np.concatenate([f.samples for f in frames])
    assert normalised_xcorr_peak(captured, assistant_speech) >= 0.9
    positions = [f.position for f in frames]
    assert positions == sorted(positions)
    assert all(np.diff([f.at for f in frames]) > 0)
    assert mic.dropped == 0
    assert mic.overflows == 0


async def test_b_stop_silences_the_speaker_and_reports_what_was_heard(pulse: pulse_kit.Pulse) -> None:
    player = Player("pulse")
    await player.start()
    rate = player.rate
    recorder = pulse_kit.Recorder(f"{pulse.speaker}.monitor", rate)
    try:
        await _poll(lambda: recorder.seconds >= 0.1, 5, "the recorder to run")
        player.enqueue(1, "a", tone(2.0, rate))
        await _poll(lambda: player.played_ms(1, "a") >= 700.0, 5, "700 ms to play")
        played_at_stop = player.played_ms(1, "a")
        heard = player.stop(1)["a"]
        device_ms = 1000.0 * (player.latency_s + player.block_s)
        recorded_at_stop = recorder.seconds
        assert not player.enqueue(1, "late", tone(0.5, rate)), "a stopped turn takes no more audio"
        await _poll(lambda: recorder.seconds >= recorded_at_stop + 0.4, 5, "400 ms of recording past the stop")
    finally:
        recording = await asyncio.to_thread(recorder.finish)
        await player.close()
    loud = np.nonzero(np.abs(recording) > 0.05)[0]
    onset, cut = loud[0], loud[-1] + 1
    recorded_ms = (cut - onset) * 1000.0 / rate
    stop_index = onset + round(played_at_stop * rate / 1000.0)
    report(f"stop: heard {heard:.1f} ms, recorded {recorded_ms:.1f} ms, "
           f"stop-to-silence {(cut - stop_index) * 1000 / rate:.1f} ms, device buffer {device_ms:.1f} ms")  # fmt: skip
    # Never more than was played: what is reported heard is exact to PortAudio's stamps, within the device's
    # buffer and a block. It may be less than was played by the time the sound server takes to see the flush:
    # the device's buffer on an idle machine, more on a loaded one (loaded runs: 23, 29 and 49 ms out, silent
    # 28-32 and 50 ms on); that is the stop's latency, whose promise is SPEC's 120 ms.
    assert heard - recorded_ms <= max(20.0, device_ms), "reported heard audio the speaker never played"
    assert recorded_ms - heard <= STOP_TARGET_MS, "the speaker went on past the stop target"
    silent_from = stop_index + round(STOP_TARGET_MS * rate / 1000.0)
    assert np.all(np.abs(recording[silent_from:]) < 0.05), "the speaker went on past the stop target"
    assert len(recording) - cut > 0.3 * rate, "the recording ran on in silence after the stop"


async def test_c_an_idle_speaker_keeps_a_headset_sink_ready_to_play_at_once(pulse: pulse_kit.Pulse) -> None:
    """Issue 37: on a headset nothing but the player asks the sound server for low latency. A stream that stopped
    while idle (or to drop its buffer on a pause or stop) and started again waited behind the sink's 2 s render
    block: replies ~2 s late while the stamps said 20 ms. The stream runs from start to close, so the sink stays
    at low latency through idle time, a pause and a stop, and every segment plays whole."""
    with pulse_kit.headset(pulse):
        player = Player(None)  # the window's device: the system default
        await player.start()
        rate = player.rate
        seen: list[tuple[str, int, int]] = []

        async def look(when: str) -> None:
            ahead = await asyncio.to_thread(pulse_kit.sink_latencies_us)
            block = await asyncio.to_thread(lambda: pulse_kit.sink_latencies_us(configured=True))
            seen.append((when, ahead[pulse.speaker], block[pulse.speaker]))

        try:
            await asyncio.sleep(2.5)  # idle: longer than the stream used to run before it rested
            await look("idle")
            assert player.enqueue(1, "a", tone(0.5, rate))
            await _poll(lambda: player.played_ms(1, "a") >= 200.0, 5, "200 ms to play")
            player.pause()
            await look("paused")
            player.resume()
            await asyncio.wait_for(player.drain(1), 5)
            assert player.enqueue(2, "b", tone(1.0, rate))
            await _poll(lambda: player.played_ms(2, "b") >= 200.0, 5, "200 ms of the next to play")
            player.stop(2)
            await look("stopped")
            assert player.enqueue(3, "c", tone(0.3, rate))
            await look("after the stop")
            await asyncio.wait_for(player.drain(3), 5)
            assert player.failure is None, player.failure
        finally:
            await player.close()
    report("headset sink (ahead of the clock, render block), us: " + ", ".join(f"{w} {a}/{b}" for w, a, b in seen))
    assert all(block < 100_000 for _, _, block in seen), f"the sink went back to its idle render block: {seen}"
    assert all(ahead < 100_000 for _, ahead, _ in seen), f"new audio waited behind the sink's render: {seen}"
    assert player.played_ms(1, "a") == pytest.approx(500.0, abs=1.0)
    assert player.played_ms(3, "c") == pytest.approx(300.0, abs=1.0)
