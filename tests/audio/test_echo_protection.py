"""Without working echo protection Parley falls back to push-to-talk, and says so (EchoProtectionLost); once the
canceller works again, talking over it interrupts again (EchoProtectionRestored). Never a self-talk loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from audio.aec import EchoCanceller
from audio.bargein import BargeInDetector
from audio.events import BargeIn, BargeInConfirmed, EchoProtectionLost, EchoProtectionRestored
from audio.fixtures import EchoMixer, FileSource, RecordingSink
from audio.listen import Listener, ListenEvent
from audio.ports import RATE, ReferenceReader
from audio.vad import Vad
from engine.testing.clock import VirtualClock

pytestmark = pytest.mark.anyio
USER_AT = 12.0  # seconds into the session; the reply plays from the start


class _Broken:
    """A processing module that fails on every near-end frame."""

    def process_reverse_stream(self, frame: Any) -> None:
        return None

    def set_stream_delay_ms(self, ms: int) -> None:
        return None

    def process_stream(self, frame: Any) -> None:
        raise RuntimeError("apm: internal error")


class _Deaf(_Broken):
    """A module that runs but removes nothing (a canceller that diverged)."""

    def process_stream(self, frame: Any) -> None:
        return None


class _Scripted(EchoCanceller):
    """Works, then from `bad_s` on runs `bad` instead: a broken one is replaced by the canceller's own retry, a
    deaf one is swapped back for a working module at `good_s`."""

    def __init__(self, reference: ReferenceReader, bad: type, bad_s: float, good_s: float) -> None:
        super().__init__(reference)
        self._bad, self._bad_s, self._good_s = bad, bad_s, good_s
        self._start: float | None = None
        self._swapped = False

    def _chunk(self, mic: np.ndarray, at: float) -> np.ndarray:
        self._start = at if self._start is None else self._start
        elapsed = at - self._start
        if elapsed >= self._bad_s and not self._swapped:
            self._apm, self._swapped = self._bad(), True
        elif elapsed >= self._good_s and isinstance(self._apm, self._bad):
            self._apm = self._module()
        return super()._chunk(mic, at)


async def _session(
    canceller: Callable[[ReferenceReader], EchoCanceller], speech: np.ndarray, user: np.ndarray
) -> tuple[list[tuple[float, ListenEvent]], BargeInDetector]:
    """A long reply echoing into the microphone (gain 0.7); the user talks over it at USER_AT."""
    clock = VirtualClock()
    sink = RecordingSink(clock, rate=RATE)
    files = FileSource(clock)
    mic = EchoMixer(files, sink, gain=0.7)
    detector = BargeInDetector(sink, clock)
    listener = Listener(mic, Vad(), echo=canceller(sink.tap()), barge_in=detector)
    seen: list[tuple[float, ListenEvent]] = []
    async with clock.autojump():
        await sink.start()
        await mic.start()
        task = asyncio.ensure_future(listener.run(lambda e: seen.append((clock.now() - files.started_at, e))))
        detector.arm()
        sink.enqueue(1, "reply", np.concatenate([speech, speech, speech]))
        files.add(user, USER_AT)
        await clock.sleep(USER_AT + 2.0)
        await mic.close()
        await task
        await sink.close()
    return seen, detector


async def test_no_canceller_at_all_means_push_to_talk_only(
    assistant_speech: np.ndarray, user_speech: np.ndarray
) -> None:
    seen, detector = await _session(lambda _tap: EchoCanceller(None, enabled=False), assistant_speech, user_speech)
    lost = [e for _, e in seen if isinstance(e, EchoProtectionLost)]
    assert len(lost) == 1
    assert "no echo canceller" in lost[0].reason
    assert not [e for _, e in seen if isinstance(e, BargeIn)], "not even the user: push-to-talk only"
    assert isinstance(detector.push_to_talk(), BargeInConfirmed)


@pytest.mark.parametrize(("module", "reason"), [(_Broken, "failed: apm: internal error"), (_Deaf, "removes only")])
async def test_a_canceller_failing_mid_reply_is_reported_and_its_recovery_too(
    module: type, reason: str, assistant_speech: np.ndarray, user_speech: np.ndarray
) -> None:
    seen, _ = await _session(lambda tap: _Scripted(tap, module, 2.0, 7.0), assistant_speech, user_speech)
    facts = [(t, e) for t, e in seen if isinstance(e, EchoProtectionLost | EchoProtectionRestored)]
    assert [type(e) for _, e in facts] == [EchoProtectionLost, EchoProtectionRestored], facts
    (lost_at, lost), (restored_at, _) = facts
    assert isinstance(lost, EchoProtectionLost)
    assert reason in lost.reason
    assert 2.0 <= lost_at < restored_at < USER_AT
    barge_ins = [(t, e) for t, e in seen if isinstance(e, BargeIn)]
    assert barge_ins, "protection is back: the user interrupts again"
    assert all(t >= USER_AT for t, _ in barge_ins), f"Parley interrupted itself: {barge_ins}"


class _Inventing(EchoCanceller):
    """A canceller whose output holds a voice the microphone never heard (from clock time `voice_at` on)."""

    def __init__(self, reference: ReferenceReader, voice: np.ndarray, voice_at: float) -> None:
        super().__init__(reference)
        self._voice, self._voice_at = voice, voice_at

    def _chunk(self, mic: np.ndarray, at: float) -> np.ndarray:
        start = round((at - self._voice_at) * RATE)
        added = np.zeros(len(mic), np.float32)
        if 0 <= start < len(self._voice):
            piece = self._voice[start : start + len(mic)]
            added[: len(piece)] = piece
        return super()._chunk(mic, at) + added


@pytest.mark.parametrize("heard_by_the_microphone", [True, False])
async def test_a_voice_only_the_canceller_holds_is_nobody_s(
    heard_by_the_microphone: bool, user_speech: np.ndarray
) -> None:
    """Parley thinking (armed, nothing played yet), the room silent: a voice in the cleaned audio that the
    microphone never heard is neither a barge-in nor the start of an utterance (a CI run's self-interruption at a
    reply's first words: suppressed -90 dB, no echo to explain); the same voice said into the microphone is both."""
    clock = VirtualClock()
    sink = RecordingSink(clock, rate=RATE)
    files = FileSource(clock)
    detector = BargeInDetector(sink, clock)
    seen: list[ListenEvent] = []
    async with clock.autojump():
        await sink.start()
        await files.start()
        at = files.started_at + 1.0
        if heard_by_the_microphone:
            files.add(user_speech, 1.0)
        echo = _Inventing(sink.tap(), user_speech if not heard_by_the_microphone else np.zeros(0), at)
        listener = Listener(files, Vad(), echo=echo, barge_in=detector)
        detector.arm()
        task = asyncio.ensure_future(listener.run(seen.append))
        await clock.sleep(1.5 + len(user_speech) / RATE)
        await files.close()
        await task
        await sink.close()
    kinds = {type(e).__name__ for e in seen}
    if heard_by_the_microphone:
        assert {"BargeIn", "SpeechStarted"} <= kinds, seen
    else:
        assert not kinds & {"BargeIn", "SpeechStarted", "OnsetPaused"}, seen
