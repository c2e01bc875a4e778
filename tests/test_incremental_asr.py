"""The incremental transcriber on the virtual clock: partial passes paced by the injected clock, the speculative
final pass at a pause, and a final that reuses it when only quiet came after."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import numpy as np
import pytest

from adapters.asr.incremental import IncrementalTranscriber
from adapters.contract.cancel import CancelSignal, User
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples, Transcript
from adapters.testing_speech import FakeTranscriber
from engine.testing import VirtualClock
from tests.conformance.speech_harness import until

pytestmark = pytest.mark.anyio


def _speech(seconds: float) -> np.ndarray:
    return (0.3 * np.sin(np.arange(int(seconds * ASR_SAMPLE_RATE)) / 5)).astype(np.float32)


def _quiet(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * ASR_SAMPLE_RATE), dtype=np.float32)


@asynccontextmanager
async def _running(incremental: IncrementalTranscriber) -> AsyncIterator[CancelSignal]:
    signal = CancelSignal()
    runner = asyncio.create_task(incremental.run(signal))
    try:
        yield signal
    finally:
        signal.set(User())
        await asyncio.wait({runner})
        assert runner.exception() is None


async def test_partial_passes_are_paced_by_the_injected_clock() -> None:
    clock = VirtualClock()
    incremental = IncrementalTranscriber(FakeTranscriber(step_s=0.001), clock, interval_s=0.8)
    async with _running(incremental):
        incremental.append(_speech(0.5), clock.now())
        assert await until(lambda: incremental.passes == 1)
        incremental.append(_speech(0.5), clock.now())
        await clock.advance(0.5)  # before the interval: the loop still rests
        assert incremental.passes == 1
        await clock.advance(0.3)
        assert await until(lambda: incremental.passes == 2)
        assert incremental.covered_s == pytest.approx(1.0)


async def test_quiet_audio_starts_no_partial_pass() -> None:
    clock = VirtualClock()
    incremental = IncrementalTranscriber(FakeTranscriber(step_s=0.001), clock, interval_s=0.2)
    async with _running(incremental):
        incremental.append(_speech(0.5), clock.now())
        assert await until(lambda: incremental.passes == 1)
        incremental.append(_quiet(1.0), clock.now() + 1.0)
        await clock.advance(2.0)
        assert incremental.passes == 1


async def test_the_speculative_pass_covers_the_tail_a_partial_pass_left_out() -> None:
    clock = VirtualClock()
    fake = FakeTranscriber(step_s=0.001)
    incremental = IncrementalTranscriber(fake, clock, interval_s=10.0, min_new_s=0.3)
    async with _running(incremental) as signal:
        incremental.append(_speech(0.5), 1000.5)
        assert await until(lambda: incremental.passes == 1)
        incremental.append(_speech(0.2), 1000.7)  # shorter than min_new_s: no partial pass covers it
        incremental.append(_quiet(0.2), 1000.9)  # the pause the VAD reports
        words = await incremental.speculate(signal, since=1000.7)
        assert incremental.passes == 2
        assert words.duration_s == pytest.approx(0.9)
        assert incremental.covered_until == 1000.9
        incremental.append(_quiet(0.5), 1001.4)  # the silence while the turn is decided
        final = await incremental.finish(signal)
    assert incremental.reused_final
    assert final is words
    assert incremental.passes == 2


async def test_the_speculative_pass_reuses_a_pass_that_reaches_the_pause() -> None:
    clock = VirtualClock()
    incremental = IncrementalTranscriber(FakeTranscriber(step_s=0.001), clock, interval_s=10.0)
    async with _running(incremental) as signal:
        incremental.append(_speech(0.5), 1000.5)
        incremental.append(_quiet(0.3), 1000.8)
        assert await until(lambda: incremental.passes == 1)
        assert incremental.covered_s == pytest.approx(0.8)
        incremental.append(_quiet(0.1), 1000.9)
        await incremental.speculate(signal, since=1000.5)
    assert incremental.passes == 1


async def test_speech_after_the_speculative_pass_gets_a_final_pass_of_its_own() -> None:
    clock = VirtualClock()
    incremental = IncrementalTranscriber(FakeTranscriber(step_s=0.001), clock, interval_s=10.0)
    async with _running(incremental) as signal:
        incremental.append(_speech(0.5), 1000.5)
        incremental.append(_quiet(0.2), 1000.7)
        await incremental.speculate(signal, since=1000.5)
        incremental.append(_speech(0.5), 1001.2)  # the user went on
        final = await incremental.finish(signal)
    assert not incremental.reused_final
    assert final.duration_s == pytest.approx(1.2)


async def test_the_loop_ends_when_the_signal_fires() -> None:
    incremental = IncrementalTranscriber(FakeTranscriber(), VirtualClock(), interval_s=0.1)
    async with _running(incremental):
        await asyncio.sleep(0)
    assert incremental.latest is None


async def test_a_pause_beginning_after_unheard_words_transcribes_them_at_once() -> None:
    """The rest between partial passes is cut short: the pause finds its final pass made, and reuses it."""
    clock = VirtualClock()
    incremental = IncrementalTranscriber(FakeTranscriber(step_s=0.001), clock, interval_s=10.0, min_new_s=0.3)
    async with _running(incremental) as signal:
        incremental.append(_speech(0.5), 1000.5)
        assert await until(lambda: incremental.passes == 1)
        incremental.append(_speech(0.2), 1000.7)  # the last words: too few for a partial pass, and it rests anyway
        incremental.append(_quiet(0.064), 1000.764)
        incremental.pause_began(1000.7)
        assert await until(lambda: incremental.passes == 2)
        assert incremental.covered_until == 1000.764
        incremental.pause_began(1000.7)  # once per silence
        incremental.append(_quiet(0.064), 1000.828)  # the VAD's hangover runs out: the pause opens
        words = await incremental.speculate(signal, since=1000.7)
    assert incremental.passes == 2
    assert words.duration_s == pytest.approx(0.764)


@pytest.mark.parametrize("tail", ["heard", "loud"])
async def test_no_early_pass_without_unheard_words_followed_by_quiet(tail: str) -> None:
    clock = VirtualClock()
    incremental = IncrementalTranscriber(FakeTranscriber(step_s=0.001), clock, interval_s=10.0, min_new_s=0.3)
    async with _running(incremental):
        incremental.append(_speech(0.5), 1000.5)
        assert await until(lambda: incremental.passes == 1)
        if tail == "heard":
            incremental.append(_quiet(0.064), 1000.564)  # every word is in the last pass already
        else:
            incremental.append(_speech(0.064), 1000.564)  # a noisy room: the VAD's silence is not quiet
        incremental.pause_began(1000.5)
        await clock.advance(1.0)
        assert incremental.passes == 1


async def test_an_early_pass_that_proved_no_pause_leaves_the_pace_as_it_was() -> None:
    """The user went on: the next partial pass comes after the usual rest, not at once."""
    clock = VirtualClock()
    incremental = IncrementalTranscriber(FakeTranscriber(step_s=0.001), clock, interval_s=0.8, min_new_s=0.3)
    async with _running(incremental):
        incremental.append(_speech(0.5), 1000.5)
        assert await until(lambda: incremental.passes == 1)
        incremental.append(_speech(0.1), 1000.6)
        incremental.append(_quiet(0.064), 1000.664)
        incremental.pause_began(1000.6)
        assert await until(lambda: incremental.passes == 2)
        incremental.append(_speech(0.5), 1001.164)  # the user goes on
        await clock.advance(0.5)
        assert incremental.passes == 2
        await clock.advance(0.3)
        assert await until(lambda: incremental.passes == 3)


class _Wrapping:
    """A fake transcriber that does something around each of the inner one's passes."""

    def __init__(self, inner: FakeTranscriber) -> None:
        self.inner = inner

    @property
    def sample_rate(self) -> int:
        return self.inner.sample_rate

    @property
    def busy(self) -> int:
        return self.inner.busy


class _GoesOnDuringThePass(_Wrapping):
    """A transcriber during whose next pass the user goes on speaking (`then` appends their words)."""

    def __init__(self) -> None:
        super().__init__(FakeTranscriber(step_s=0.001))
        self.then: Callable[[], None] | None = None

    async def transcribe(
        self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE
    ) -> Transcript:
        then, self.then = self.then, None
        if then is not None:
            then()
        return await self.inner.transcribe(samples, signal, sample_rate=sample_rate)


async def test_words_that_come_during_an_early_pass_end_it_and_the_pace_is_as_it_was() -> None:
    """The pause was none (the user went on while its pass ran): no pass after pass through the rest of the turn."""
    clock = VirtualClock()
    transcriber = _GoesOnDuringThePass()
    incremental = IncrementalTranscriber(transcriber, clock, interval_s=0.8, min_new_s=0.3)
    async with _running(incremental):
        incremental.append(_speech(0.5), 1000.5)
        assert await until(lambda: incremental.passes == 1)
        incremental.append(_speech(0.1), 1000.6)
        incremental.append(_quiet(0.064), 1000.664)
        transcriber.then = lambda: incremental.append(_speech(0.5), 1001.164)  # the user goes on
        incremental.pause_began(1000.6)
        assert await until(lambda: clock.next_deadline() is not None), "it rests once its passes are done"
        assert incremental.passes == 2, "the next partial pass waits for the rest"
        await clock.advance(0.8)
        assert await until(lambda: incremental.passes == 3)


async def test_a_pause_that_begins_during_a_partial_pass_gets_its_early_pass_right_after_it() -> None:
    clock = VirtualClock()
    transcriber = _GoesOnDuringThePass()
    incremental = IncrementalTranscriber(transcriber, clock, interval_s=10.0, min_new_s=0.3)

    def last_words_then_a_pause() -> None:
        incremental.append(_speech(0.2), 1000.7)
        incremental.append(_quiet(0.064), 1000.764)
        incremental.pause_began(1000.7)

    transcriber.then = last_words_then_a_pause
    async with _running(incremental):
        incremental.append(_speech(0.5), 1000.5)
        assert await until(lambda: incremental.passes == 2), "no rest of 10 s before the pause's words are heard"
        assert incremental.covered_until == 1000.764


async def test_a_reopened_utterance_is_transcribed_whole_by_one_run() -> None:
    """The speaker went on after `finish`: one new `run` takes over (the old one ends), the next `finish` reads
    everything, the pause included."""
    clock = VirtualClock()
    heard = FakeTranscriber(step_s=0.001)
    incremental = IncrementalTranscriber(heard, clock, interval_s=0.2)
    async with _running(incremental) as signal:
        incremental.append(_speech(0.5), clock.now())
        assert await until(lambda: incremental.passes == 1)
        first = await incremental.finish(signal)
        incremental.reopen()
        again = asyncio.create_task(incremental.run(signal))
        incremental.append(_quiet(0.6), clock.now())
        incremental.append(_speech(0.5), clock.now())
        await clock.advance(0.3)
        assert await until(lambda: incremental.passes == 2)
        whole = await incremental.finish(signal)
        await asyncio.wait({again})
    assert first.duration_s == pytest.approx(0.5)
    assert whole.duration_s == pytest.approx(1.6)


class _LeadInSpoilsIt(_Wrapping):
    """Whisper on a barge-in's lead-in of double talk: audio that begins with noise holds no words for it."""

    def __init__(self) -> None:
        super().__init__(FakeTranscriber("what is two plus two", step_s=0.001))
        self.calls: list[float] = []

    async def transcribe(
        self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE
    ) -> Transcript:
        self.calls.append(len(samples) / ASR_SAMPLE_RATE)
        if np.array_equal(samples[:100], _noise(0.4)[:100]):
            return Transcript("", (), 0.9, "en", len(samples) / ASR_SAMPLE_RATE)
        return await self.inner.transcribe(samples, signal, sample_rate=sample_rate)


def _noise(seconds: float) -> np.ndarray:
    return np.random.default_rng(7).uniform(-0.3, 0.3, int(seconds * ASR_SAMPLE_RATE)).astype(np.float32)


async def _heard_after_a_lead_in(begins: bool, then: np.ndarray | None = None) -> tuple[Transcript, _LeadInSpoilsIt]:
    """0.4 s of lead-in, then `then` (0.6 s of speech and 0.2 s of quiet unless told)."""
    transcriber = _LeadInSpoilsIt()
    incremental = IncrementalTranscriber(transcriber, VirtualClock(), interval_s=10.0)
    incremental.append(_noise(0.4), 1000.4)
    if begins:
        incremental.speech_begins(1000.4)
    after = np.concatenate([_speech(0.6), _quiet(0.2)]) if then is None else then
    incremental.append(after, 1000.4 + len(after) / ASR_SAMPLE_RATE)
    return await incremental.speculate(CancelSignal(), since=1001.0), transcriber


async def test_a_pass_with_no_words_is_made_again_from_where_the_speech_began() -> None:
    """The CI run whose "what is two plus two" over a loud reply came back empty: the lead-in spoilt the pass."""
    heard, transcriber = await _heard_after_a_lead_in(begins=True)
    assert heard.text == "what is two plus two"
    assert transcriber.calls == [pytest.approx(1.2), pytest.approx(0.8)]
    assert heard.words[0].start_s >= 0.4  # still counted from the lead-in's start
    assert heard.duration_s == pytest.approx(1.2)


async def test_without_a_lead_in_an_empty_pass_is_not_made_again() -> None:
    heard, transcriber = await _heard_after_a_lead_in(begins=False)
    assert heard.empty
    assert len(transcriber.calls) == 1


async def test_when_the_speech_alone_holds_no_words_either_the_whole_pass_stands() -> None:
    heard, transcriber = await _heard_after_a_lead_in(begins=True, then=_quiet(0.6))
    assert heard.empty
    assert heard.no_speech_prob == 0.9  # the whole pass's reading, not the silence's
    assert transcriber.calls == [pytest.approx(1.0), pytest.approx(0.6)]


class _Held(FakeTranscriber):
    """A pass that lasts until the test lets it end."""

    def __init__(self) -> None:
        super().__init__(step_s=0.001)
        self.gate = asyncio.Event()

    async def transcribe(
        self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE
    ) -> Transcript:
        await self.gate.wait()
        return await super().transcribe(samples, signal, sample_rate=sample_rate)


async def test_a_pass_under_way_tells_how_far_it_reads() -> None:
    """The end of turn asks whether a pause's words are being made already (audio.turns.end_of_turn)."""
    clock, held = VirtualClock(), _Held()
    incremental = IncrementalTranscriber(held, clock, interval_s=10.0, min_new_s=0.3)
    assert not incremental.reading_up_to(1000.0), "no pass under way"
    async with _running(incremental):
        incremental.append(_speech(0.5), 1000.5)
        assert await until(lambda: incremental.reading_up_to(1000.5))
        assert not incremental.reading_up_to(1000.6), "it reads up to the audio it was given"
        incremental.append(_quiet(0.1), 1000.6)
        assert incremental.reading_up_to(1000.5), "quiet after it adds no words"
        incremental.append(_speech(0.1), 1000.7)
        assert not incremental.reading_up_to(1000.5), "words came after what it reads"
        held.gate.set()
        assert await until(lambda: incremental.passes == 1)
        assert not incremental.reading_up_to(1000.5), "no pass under way"
