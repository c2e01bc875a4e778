"""The fixture devices on the virtual clock: the same checks as the real-device tests (a, b, c), run fast."""

from __future__ import annotations

import numpy as np
import pytest

from audio.events import EchoProtectionLost
from audio.fixtures import EchoMixer, FileSource, RecordingSink
from audio.playout import REST_AFTER_S
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


async def _sink_playing(clock: VirtualClock, seconds: float) -> RecordingSink:
    """A started fixture speaker with a tone of `seconds` queued as turn 1's segment "a"."""
    sink = RecordingSink(clock, latency_s=0.03)
    await sink.start()
    sink.enqueue(1, "a", tone(seconds, sink.rate))
    return sink


async def test_b_recording_sink_stop_is_silent_within_its_latency_and_reports_what_was_heard() -> None:
    clock = VirtualClock()
    sink = await _sink_playing(clock, 2.0)
    rate = sink.rate
    async with clock.autojump():
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
    assert cut <= stop_index + round((sink.latency_s + sink.block_s) * rate) + 1, "only what the device held sounds"
    assert onset == pytest.approx(round(0.0 * rate), abs=1)
    # 670 ms were audible; what the device holds (its 30 ms latency and the block rendered ahead) follows
    assert 700.0 - 1.0 <= heard <= 700.0 + 1000.0 * sink.block_s + 1.0


class _StarvedClock(VirtualClock):
    """Every sleep wakes `late_s` after it was due: a loop too busy to keep a 10 ms block rate."""

    def __init__(self, late_s: float) -> None:
        super().__init__()
        self.late_s = late_s

    async def sleep(self, seconds: float) -> None:
        await super().sleep(max(0.0, seconds) + self.late_s)


async def test_b_a_starved_recording_sink_underruns_but_still_plays_its_queue() -> None:
    """Woken late at every block, the sink plays silence for what it missed and then the next block of audio:
    the reply is heard (stretched by the gaps), as it is on a loaded machine, never held back for good."""
    clock = _StarvedClock(late_s=0.035)
    sink = await _sink_playing(clock, 0.5)
    rate = sink.rate
    async with clock.autojump():
        await clock.sleep(3.0)
        elapsed = clock.now() - sink.recording_start
        await sink.close()
    heard = sink.audible_at(1, "a", 0.0)
    assert heard is not None, "the queued reply reached the speaker"
    assert sink.audible_at(1, "a", 499.0) is not None, "all of it"
    recording = sink.recording()
    assert abs(len(recording) / rate - elapsed) <= 0.1, "silence fills what the starved loop missed"
    played = tone(0.5, rate)
    assert float(np.sum(recording**2)) == pytest.approx(float(np.sum(played**2)), rel=0.01), "every sample once"


async def test_b_a_recording_sink_rests_like_the_player_and_stays_on_the_clock() -> None:
    """Nothing to play for REST_AFTER_S: no block is rendered (a silent room woke the loop every 10 ms: issue 13's
    idle CPU) until a segment is queued. The rest is silence in the recording, which stays on the clock, and the
    segment plays from the next block due, `latency_s` later, as on a running device."""
    clock = VirtualClock()
    sink = await _sink_playing(clock, 0.3)
    rate, rendered = sink.rate, [0]
    render = sink._core.render

    def counted(out: np.ndarray, dac_time: float) -> int:
        rendered[0] += 1
        return render(out, dac_time)

    sink._core.render = counted  # type: ignore[method-assign]
    async with clock.autojump():
        await clock.sleep(0.3 + REST_AFTER_S + 0.1)
        before = rendered[0]
        await clock.sleep(5.0)
        assert rendered[0] == before, "no block rendered while resting"
        queued_at = clock.now()
        sink.enqueue(1, "b", tone(0.2, rate))
        await clock.sleep(1.0)
        await sink.close()
        closed_at = clock.now()
    heard = sink.audible_at(1, "b", 0.0)
    assert heard is not None
    assert queued_at + sink.latency_s <= heard <= queued_at + sink.block_s + sink.latency_s + 1e-9
    recording = sink.recording()
    rendered_s = closed_at - (sink.recording_start - sink.latency_s)  # blocks are rendered latency_s ahead
    assert abs(len(recording) / rate - rendered_s) <= 2 * sink.block_s, "the rest is silence in the recording"
    second = np.nonzero(np.abs(recording[round(0.5 * rate) :]) > 0.05)[0][0] + round(0.5 * rate)
    assert second == pytest.approx((heard - sink.recording_start) * rate, abs=2), "the recording is on the clock"


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
