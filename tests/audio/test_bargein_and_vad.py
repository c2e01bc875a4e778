"""VAD hysteresis and the barge-in facts: pause at once, resume on a false alarm, confirm otherwise."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from audio.bargein import BargeInDetector, EchoEvidence
from audio.events import (
    BargeIn,
    BargeInConfirmed,
    FalseBargeInResumed,
    OnsetPaused,
    OnsetResumed,
    SpeechEnded,
    SpeechStarted,
)
from audio.fixtures import RecordingSink
from audio.listen import echo_likeness
from audio.ports import RATE, Frame
from audio.vad import WINDOW, Vad, VadConfig
from engine.testing.clock import VirtualClock

pytestmark = pytest.mark.anyio


def _frames(samples: np.ndarray, at: float = 100.0) -> list[Frame]:
    return [Frame(samples[i : i + 320], at + i / RATE, i) for i in range(0, len(samples) - 319, 320)]


def test_vad_reports_one_utterance_with_its_onset_and_end(user_speech: np.ndarray) -> None:
    audio = np.concatenate([np.zeros(RATE, np.float32), user_speech, np.zeros(RATE, np.float32)])
    vad = Vad(VadConfig(min_speech_ms=64, min_silence_ms=300))
    events = [e for f in _frames(audio) for e in vad.feed(f)]
    assert [type(e) for e in events] == [SpeechStarted, SpeechEnded]
    lead = np.nonzero(np.abs(user_speech) > 0.02)[0][0] / RATE
    assert events[0].at == pytest.approx(101.0 + lead, abs=0.07)
    assert events[1].at == pytest.approx(101.0 + len(user_speech) / RATE, abs=0.15)


def test_vad_ignores_silence_and_noise() -> None:
    noise = (np.random.default_rng(1).standard_normal(3 * RATE) * 0.01).astype(np.float32)
    vad = Vad()
    assert [e for f in _frames(noise) for e in vad.feed(f)] == []


def test_vad_hangover_bridges_short_pauses(user_speech: np.ndarray) -> None:
    gap = np.zeros(int(0.15 * RATE), np.float32)
    audio = np.concatenate([np.zeros(RATE, np.float32), user_speech, gap, user_speech, np.zeros(RATE, np.float32)])
    vad = Vad(VadConfig(min_silence_ms=300))
    events = [e for f in _frames(audio) for e in vad.feed(f)]
    assert [type(e) for e in events] == [SpeechStarted, SpeechEnded]


def test_the_silence_speech_falls_into_is_told_before_the_hangover_runs_out(user_speech: np.ndarray) -> None:
    """Whoever prepares for the end of a turn may start at the silence's first windows, where SpeechEnded says."""
    audio = np.concatenate([np.zeros(RATE, np.float32), user_speech, np.zeros(RATE, np.float32)])
    vad = Vad(VadConfig(min_silence_ms=300))
    silences: list[tuple[float | None, float]] = []
    ended: list[SpeechEnded] = []
    for frame in _frames(audio):
        ended += [e for e in vad.feed(frame) if isinstance(e, SpeechEnded)]
        if not ended:
            silences.append((vad.silence_from, vad.silence_ms))
    assert (vad.silence_from, vad.silence_ms) == (None, 0.0)
    told = [(since, ms) for since, ms in silences if since is not None and ms >= 64]
    assert told, "the silence was never told before SpeechEnded"
    assert told[-1][0] == ended[0].at, "the last silence told is the one that ended the speech"
    assert max(ms for since, ms in told if since == ended[0].at) < 300


def _ramp(rate: int) -> np.ndarray:
    return np.linspace(0.1, 0.6, 3 * rate, dtype=np.float32)


async def _speaking_sink(clock: VirtualClock) -> RecordingSink:
    sink = RecordingSink(clock, latency_s=0.02)
    await sink.start()
    sink.enqueue(1, "s", _ramp(sink.rate))
    await clock.advance(0.5)
    return sink


async def test_a_barge_in_pauses_and_a_wordless_one_resumes_where_it_stopped() -> None:
    clock = VirtualClock()
    sink = await _speaking_sink(clock)
    facts: list[object] = []
    detector = BargeInDetector(sink, clock, min_speech_ms=80, on_fact=facts.append)
    assert detector.advance(clock.now(), 96.0) is None, "disarmed: the assistant is not speaking"
    detector.arm()
    assert detector.advance(clock.now(), 64.0) is None, "shorter than the minimum"
    assert detector.advance(clock.now(), 96.0, EchoEvidence(suppressed_db=25.0)) is None, "mostly cancelled echo"
    assert detector.advance(clock.now(), 96.0, EchoEvidence(likeness=0.9)) is None, "echo the canceller let through"
    assert detector.advance(clock.now(), 96.0, EchoEvidence(unexplained=0.02)) is None, "the echo path explains it"
    assert detector.advance(clock.now(), 96.0, EchoEvidence(suppressed_db=-40.0)) is None, "the mic never heard it"
    fired = detector.advance(clock.now(), 96.0)
    assert isinstance(fired, BargeIn)
    assert fired.at == pytest.approx(clock.now() - 0.096)
    paused_at = sink.progress(1)["s"].handed_ms
    await clock.advance(0.3)
    assert sink.played_ms(1, "s") == paused_at, "paused: only what the device held reaches the listener"

    async def no_words() -> bool:
        await clock.sleep(0.2)
        return False

    async with clock.autojump():
        outcome = await detector.resolve(fired, no_words)
        await clock.sleep(0.2)
    assert isinstance(outcome, FalseBargeInResumed)
    assert facts == [fired, outcome]
    await sink.close()
    played = sink.recording()
    played = played[played != 0.0]
    assert len(played) > paused_at * sink.rate / 1000 + 0.1 * sink.rate, "it went on after the resume"
    assert np.array_equal(played, _ramp(sink.rate)[: len(played)]), "no sample lost or repeated across the pause"


@pytest.mark.parametrize("answer", ["words", "too slow"])
async def test_words_or_no_answer_in_the_window_confirm_the_barge_in(answer: str) -> None:
    clock = VirtualClock()
    sink = await _speaking_sink(clock)
    detector = BargeInDetector(sink, clock, resolve_window_ms=500)
    detector.arm()
    fired = detector.advance(clock.now(), 100.0)
    assert fired is not None
    ended = asyncio.Event()

    async def transcriber() -> bool:
        try:
            await clock.sleep(0.1 if answer == "words" else 5.0)
            return True
        finally:
            ended.set()

    async with clock.autojump():
        outcome = await detector.resolve(fired, transcriber)
    assert isinstance(outcome, BargeInConfirmed)
    assert ended.is_set(), "the predicate has really ended before resolve returns"
    assert sink.failure is None
    assert outcome.confirmed_at - fired.detected_at == pytest.approx(0.1 if answer == "words" else 0.5, abs=0.02)
    await sink.close()


async def test_push_to_talk_interrupts_at_once() -> None:
    clock = VirtualClock()
    sink = await _speaking_sink(clock)
    detector = BargeInDetector(sink, clock)
    assert detector.push_to_talk() is None
    detector.arm()
    confirmed = detector.push_to_talk()
    before = sink.progress(1)["s"].handed_ms  # what the device held when it went silent still plays
    assert isinstance(confirmed, BargeInConfirmed)
    assert confirmed.source == "push_to_talk"
    await clock.advance(0.2)
    assert sink.played_ms(1, "s") == before
    await sink.close()


def test_echo_likeness_tells_the_played_signal_from_another_voice() -> None:
    rng = np.random.default_rng(7)
    played = rng.standard_normal(8000)
    echo = 0.3 * played[2000:6800] + 0.01 * rng.standard_normal(4800)  # 125 ms late, quieter, a little noise
    assert echo_likeness(echo, played) > 0.95
    assert echo_likeness(rng.standard_normal(4800), played) < 0.2
    assert echo_likeness(np.zeros(4800), played) == 0.0
    assert echo_likeness(echo, np.zeros(8000)) < 1e-3, "nothing was played"


async def test_an_onset_pauses_at_once_and_resumes_when_no_speech_follows() -> None:
    clock = VirtualClock()
    sink = await _speaking_sink(clock)
    facts: list[object] = []
    detector = BargeInDetector(sink, clock, on_fact=facts.append)
    assert detector.onset(clock.now()) is None, "disarmed: nothing to interrupt"
    detector.arm()
    onset = detector.onset(clock.now())
    assert isinstance(onset, OnsetPaused)
    paused_at = sink.progress(1)["s"].handed_ms
    await clock.advance(0.1)
    assert sink.played_ms(1, "s") == paused_at, "silent from the onset on, once the device's buffer played out"
    assert detector.tick(onset.at + 0.1, 0.0) is None, "the sound may be the start of a word: hold"
    resumed = detector.tick(onset.at + 0.3, 0.0)
    assert isinstance(resumed, OnsetResumed)
    await clock.advance(0.1)
    assert sink.played_ms(1, "s") > paused_at, "the reply went on where it stopped"
    assert facts == [onset, resumed]
    await sink.close()


async def test_a_voice_long_onset_holds_the_pause_over_the_gap_after_a_short_stop() -> None:
    """Issue 12: a "Stop." the canceller hid from the VAD, then 150-300 ms of breath before "What time is it?":
    resuming 0.25 s after the sound let a blip of the reply through between the two."""
    clock = VirtualClock()
    sink = await _speaking_sink(clock)
    detector = BargeInDetector(sink, clock)
    detector.arm()
    start = clock.now()
    for n in range(18):  # 180 ms of unexplained sound, the VAD never reaching its minimum
        detector.onset(start + n * 0.01)
    last = start + 0.17
    assert detector.tick(last + 0.3, 0.0) is None, "a voice's onset is held past the short hold"
    assert isinstance(detector.tick(last + 0.51, 0.0), OnsetResumed), "and then the reply goes on"
    short = detector.onset(last + 1.0)
    assert short is not None
    detector.onset(last + 1.01)
    assert isinstance(detector.tick(last + 1.01 + 0.26, 0.0), OnsetResumed), "a click is held no longer than before"
    await sink.close()


async def test_speech_held_back_as_echo_under_an_onset_holds_the_pause_as_a_voice() -> None:
    """Issue 36: a soft "Stop" as loud as the reply's echo under it made three signs of sound; the VAD heard it
    but the listener held the run back as echo, and the reply resumed before "What time is it?"."""
    clock = VirtualClock()
    sink = await _speaking_sink(clock)
    detector = BargeInDetector(sink, clock)
    detector.arm()
    start = clock.now()
    for n in range(3):
        detector.onset(start + n * 0.01)
    for n in range(1, 16):  # the VAD hears speech up to 150 ms in, never fired on (the caller took it for echo)
        assert detector.tick(start + n * 0.01, 10.0 * n) is None
    spoken = start + 0.15
    assert detector.tick(spoken + 0.3, 0.0) is None, "a voice was heard: held past the short hold"
    assert isinstance(detector.tick(spoken + 0.51, 0.0), OnsetResumed), "and then the reply goes on"
    await sink.close()


async def test_speech_after_an_onset_is_a_barge_in_that_keeps_the_onset_pause() -> None:
    clock = VirtualClock()
    sink = await _speaking_sink(clock)
    detector = BargeInDetector(sink, clock, min_speech_ms=64)
    detector.arm()
    onset = detector.onset(clock.now())
    assert onset is not None
    await clock.advance(0.1)
    fired = detector.advance(onset.at + 0.1, 64.0)
    assert isinstance(fired, BargeIn)
    assert fired.paused_at == onset.paused_at, "silent since the onset, not since the VAD"
    assert fired.at == onset.at
    assert detector.tick(onset.at + 1.0, 0.0) is None, "the barge-in owns the pause now"


async def test_without_echo_protection_only_push_to_talk_interrupts() -> None:
    clock = VirtualClock()
    sink = await _speaking_sink(clock)
    detector = BargeInDetector(sink, clock)
    detector.arm()
    detector.set_protected(False)
    assert detector.onset(clock.now()) is None
    assert detector.advance(clock.now(), 200.0) is None
    assert isinstance(detector.push_to_talk(), BargeInConfirmed)
    await sink.close()


def _ends(audio: np.ndarray, config: VadConfig, lead: int = RATE // 2) -> list[float]:
    """Seconds from the clip's start to each silence the VAD placed (the start of SpeechEnded), the clip played
    `lead` samples into a stream (which moves Silero's windows over it)."""
    padded = np.concatenate([np.zeros(lead, np.float32), audio, np.zeros(RATE, np.float32)])
    vad = Vad(config)
    ended = [e for f in _frames(padded, at=0.0) for e in vad.feed(f) if isinstance(e, SpeechEnded)]
    return [e.at - lead / RATE for e in ended]


def _ended_after(audio: np.ndarray, config: VadConfig) -> float:
    """Seconds from the clip's start to where the VAD placed its last silence."""
    return _ends(audio, config)[-1]


def test_a_breath_after_the_words_does_not_hold_the_pause_shut() -> None:
    """A real speaker breathes in after the last word (-35 dB under their voice, and Silero calls it
    speech): the level floor opens the pause where the words end, so the end of turn is not asked 0.2 s late."""
    from desktop.bench.real_speech import sentences
    from desktop.bench.signals import offset_s

    clip = next(c for c in sentences() if c.name == "spk2_snt5")
    words_end = offset_s(clip.audio, RATE)
    assert words_end is not None
    floored = _ended_after(clip.audio, VadConfig(min_silence_ms=100))
    unfloored = _ended_after(clip.audio, VadConfig(min_silence_ms=100, floor_below_peak_db=None))
    assert floored - words_end < 0.08
    assert unfloored - words_end > 0.15  # the breath, as Silero alone hears it


ALIGNMENTS = range(0, WINDOW, WINDOW // 8)  # where the clip falls in Silero's windows


def test_a_soft_tail_silero_doubts_ends_the_words() -> None:
    """After this speaker's last word a soft tail, 35-50 dB under the voice, is speech to Silero at p 0.5-0.8:
    alone it places the silence about 0.2 s late. Under the floor and doubted, such a window begins the silence."""
    from desktop.bench.real_speech import sentences
    from desktop.bench.signals import offset_s

    def late(config: VadConfig) -> float:
        """Mean seconds from the words' end to the VAD's last silence, over the two clips and the alignments."""
        found = []
        for clip in (c for c in sentences() if c.name in ("spk2_snt1", "spk2_snt4")):
            words_end = offset_s(clip.audio, RATE)
            assert words_end is not None
            found += [_ends(clip.audio, config, lead)[-1] - words_end for lead in ALIGNMENTS]
        return float(np.mean(found))

    assert late(VadConfig(min_silence_ms=100)) < 0.14
    assert late(VadConfig(min_silence_ms=100, floor_doubt=0.0)) > 0.17  # the tail, as Silero alone hears it


def test_the_soft_tail_after_the_words_is_no_barge_in() -> None:
    """The turn may be decided while the tail still sounds: its windows count as no speech, so the reply just
    begun is not taken for interrupted by the user's own breath (a turn lost with no answer)."""
    from desktop.bench.real_speech import sentences

    clip = next(c for c in sentences() if c.name == "spk2_snt5")
    for lead in ALIGNMENTS:
        padded = np.concatenate([np.zeros(lead, np.float32), clip.audio, np.zeros(RATE, np.float32)])
        vad, ends, voiced = Vad(VadConfig(min_silence_ms=100)), list[float](), list[tuple[float, float]]()
        for frame in _frames(padded, at=0.0):
            ends += [e.at for e in vad.feed(frame) if isinstance(e, SpeechEnded)]
            voiced.append((vad.processed_until, vad.voiced_ms))
        after = [ms for until, ms in voiced if until > ends[-1] + WINDOW / RATE]
        assert max(after) < BargeInDetector.__init__.__kwdefaults__["min_speech_ms"], lead


def test_the_doubted_floor_adds_no_pause_inside_a_sentence() -> None:
    """Soft gaps inside words (a stop's closure) are as far under the voice, but Silero is sure of them: the
    floor cuts no read sentence where Silero's own silences do not."""
    from desktop.bench.real_speech import sentences

    for clip in sentences():
        for lead in ALIGNMENTS[::2]:
            doubted = _ends(clip.audio, VadConfig(min_silence_ms=100), lead)
            silero = _ends(clip.audio, VadConfig(min_silence_ms=100, floor_doubt=0.0), lead)
            assert len(doubted) == len(silero), (clip.name, lead)


@pytest.mark.parametrize(("loud_while_a_reply_plays", "soft_heard"), [(True, True), (False, False)])
def test_the_floor_follows_the_users_voice_not_a_reply(
    user_speech: np.ndarray, loud_while_a_reply_plays: bool, soft_heard: bool
) -> None:
    """Loud sound while a reply plays (may_gate off: it may be Parley's own echo) sets no floor, so a soft voice
    right after is heard; 35 dB under the user's own voice a second before, it is taken for a breath."""
    vad = Vad(VadConfig(min_speech_ms=64, min_silence_ms=300))
    vad.may_gate = not loud_while_a_reply_plays
    for frame in _frames(np.concatenate([user_speech, np.zeros(RATE, np.float32)]), at=0.0):
        vad.feed(frame)
    vad.may_gate = True
    soft = np.concatenate([user_speech * np.float32(10 ** (-35 / 20)), np.zeros(RATE, np.float32)])
    events = [e for f in _frames(soft, at=5.0) for e in vad.feed(f)]
    assert (SpeechStarted in [type(e) for e in events]) is soft_heard
