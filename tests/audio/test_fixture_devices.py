"""The fixture devices on the virtual clock: the same checks as the real-device tests (a, b, c), run fast."""

from __future__ import annotations

import numpy as np
import pytest

from audio.events import EchoProtectionLost
from audio.fixtures import EchoMixer, FileSource, RecordingSink
from audio.ports import RATE, Frame
from engine.testing.clock import VirtualClock
from tests.audio.conftest import ASSISTANT_WAV, USER_WAV
from tests.audio.scenario import Rig, speak_and_listen, virtual_wait
from tests.audio.signals import db, normalised_xcorr_peak, report, tone

pytestmark = pytest.mark.anyio


async def test_a_file_source_delivers_its_timeline_frame_by_frame(assistant_speech: np.ndarray) -> None:
    clock = VirtualClock()
    source = FileSource(clock, duration_s=7.0)
    source.add(ASSISTANT_WAV, at_s=0.5)
    await source.start()
    frames: list[Frame] = []
    async with clock.autojump():
        async for item in source.frames():
            assert isinstance(item, Frame)
            assert clock.now() >= item.end - 1e-9, "a frame is delivered only once its time has passed"
            frames.append(item)
    captured = np.concatenate([f.samples for f in frames])
    assert len(captured) == 7 * RATE
    assert normalised_xcorr_peak(captured, assistant_speech) >= 0.99
    assert np.all(captured[: int(0.5 * RATE)] == 0.0)
    assert [f.position for f in frames] == list(range(0, 7 * RATE, 320))


async def test_a_file_source_knows_where_its_last_clip_ends_and_when_it_has_been_heard() -> None:
    clock = VirtualClock()
    source = FileSource(clock)
    await source.start()
    assert (source.end_s, source.exhausted) == (0.0, True)
    source.add(np.ones(RATE // 2, dtype=np.float32), at_s=1.0)
    source.add(np.ones(RATE // 4, dtype=np.float32), at_s=0.2)  # placed later, ends earlier
    assert source.end_s == 1.5
    heard: list[tuple[float, bool]] = []
    async with clock.autojump():
        async for item in source.frames():
            assert isinstance(item, Frame)
            heard.append((item.end - source.started_at, source.exhausted))  # seconds on the timeline
            if heard[-1][0] >= 2.0:
                break
    assert next(end for end, exhausted in heard if exhausted) == pytest.approx(1.5)
    assert not any(exhausted for end, exhausted in heard if end < 1.5 - 1e-9)


async def test_b_recording_sink_stop_is_silent_at_once_and_reports_what_was_heard() -> None:
    clock = VirtualClock()
    sink = RecordingSink(clock, latency_s=0.03)
    rate = sink.rate
    await sink.start()
    async with clock.autojump():
        sink.enqueue(1, "a", tone(2.0, rate))
        await clock.sleep(0.7)
        stop_at = clock.now()
        heard = sink.stop(1)["a"]
        assert not sink.enqueue(1, "late", tone(0.5, rate))
        await clock.sleep(0.3)
        await sink.close()
    recording = sink.recording()
    loud = np.nonzero(np.abs(recording) > 0.05)[0]
    onset, cut = loud[0], loud[-1] + 1
    stop_index = round((stop_at - sink.recording_start) * rate)
    assert abs((cut - onset) * 1000 / rate - heard) <= 1.0
    assert cut <= stop_index + 1, "nothing sounds after the stop"
    assert onset == pytest.approx(round(0.0 * rate), abs=1)
    assert heard == pytest.approx(700.0 - 30.0, abs=1.0)  # the first 30 ms of the 700 were still in the buffer


async def _fixture_rig(clock: VirtualClock, *, echo_gain: float = 0.5) -> tuple[Rig, RecordingSink]:
    sink = RecordingSink(clock, latency_s=0.03)
    files = FileSource(clock)
    mic = EchoMixer(files, sink, gain=echo_gain, delay_s=0.04)
    await sink.start()
    await mic.start()

    async def inject_user() -> None:
        files.add(USER_WAV, at_s=clock.now() - files.started_at)

    return Rig(clock, mic, sink, inject_user, virtual_wait(clock)), sink


async def test_c_echo_never_barges_in_with_aec_fires_without_and_the_user_is_caught(
    assistant_speech: np.ndarray, user_speech: np.ndarray
) -> None:
    speech = np.concatenate([assistant_speech, assistant_speech])
    clock = VirtualClock()
    async with clock.autojump():
        rig, sink = await _fixture_rig(clock)
        on = await speak_and_listen(rig, speech, aec=True, seconds=len(speech) / RATE)
        await sink.close()
        rig, sink = await _fixture_rig(clock)
        off = await speak_and_listen(rig, assistant_speech, aec=False, seconds=4.0, stop_on_barge_in=True)
        await sink.close()
        rig, sink = await _fixture_rig(clock)
        user = await speak_and_listen(rig, speech, aec=True, seconds=5.0, user_at=2.5, stop_on_barge_in=True)
        await sink.close()
    assert on.barge_ins == [], on.events
    assert off.barge_ins == [], "without a canceller the echo path still tells the assistant's voice"
    assert any(isinstance(e, EchoProtectionLost) for e in off.events), "and protection is reported lost"
    onset = user.onset_of(user_speech)
    assert user.barge_ins
    delay_ms = (user.barge_ins[0].detected_at - onset) * 1000
    raw, clean = on.raw_audio(), on.clean_audio()
    erle = db(raw[RATE:]) - db(clean[RATE : len(raw)])
    report(f"fixture echo (gain 0.5, 40 ms): ERLE {erle:.1f} dB, barge-in {delay_ms:.0f} ms after the user's onset")
    assert erle >= 20.0
    assert 0.0 <= delay_ms <= 150.0
