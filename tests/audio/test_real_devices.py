"""Real PortAudio devices on PulseAudio null sinks (SPEC §6): capture fidelity, stop-to-silence, heard cursor."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from audio import player as player_module
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


async def test_c_an_idle_speaker_rests_and_plays_the_next_reply_whole(
    pulse: pulse_kit.Pulse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A silent room costs no callback every 10 ms: the stream stops when idle, and a segment starts it again."""
    monkeypatch.setattr(player_module, "REST_AFTER_S", 0.2)
    player = Player("pulse")
    await player.start()
    rate = player.rate
    recorder = pulse_kit.Recorder(f"{pulse.speaker}.monitor", rate)
    try:
        await _poll(lambda: player.resting, 5, "the idle stream to rest")
        asked = time.monotonic()
        assert player.enqueue(1, "a", tone(0.5, rate))
        assert not player.resting
        await asyncio.wait_for(player.drain(1), 5)
        first = player.audible_at(1, "a", 0.0)
        played = player.played_ms(1, "a")
        await _poll(lambda: player.resting, 5, "the stream to rest again")
        assert player.failure is None, player.failure
    finally:
        recording = await asyncio.to_thread(recorder.finish)
        await player.close()
    loud = np.nonzero(np.abs(recording) > 0.05)[0]
    recorded_ms = (loud[-1] + 1 - loud[0]) * 1000.0 / rate
    assert first is not None, "the segment was never stamped audible"
    report(f"rest: first audible {1000 * (first - asked):.1f} ms after the enqueue, recorded {recorded_ms:.1f} ms")
    assert played == pytest.approx(500.0, abs=1.0)
    assert abs(recorded_ms - 500.0) <= 15.0, "the segment played whole after the stream started again"
    assert first - asked <= 0.1, "starting again costs about a device buffer, no more"
