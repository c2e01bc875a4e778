"""The `Transcriber` contract, proven for Whisper and for the fake alike (no skips)."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from adapters.contract.cancel import CancelSignal, User
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples, Transcript
from adapters.runtime.pcm import resample
from tests.conformance.speech_harness import ASR_HARNESSES, AsrHarness, as_transcriber, python_threads, until

pytestmark = pytest.mark.anyio
REAL = {"whisper"}


@pytest.fixture(params=[pytest.param(n, marks=[pytest.mark.slow] if n in REAL else []) for n in sorted(ASR_HARNESSES)])
def asr(request: pytest.FixtureRequest) -> AsrHarness:
    return ASR_HARNESSES[request.param]()


def assert_well_formed(transcript: Transcript, duration_s: float) -> None:
    assert isinstance(transcript.text, str)
    assert transcript.duration_s == pytest.approx(duration_s, rel=0.01, abs=0.01)
    assert 0.0 <= transcript.no_speech_prob <= 1.0
    previous_end = 0.0
    for word in transcript.words:
        assert word.text
        assert word.text.strip() == word.text
        assert previous_end <= word.start_s <= word.end_s <= transcript.duration_s
        assert 0.0 <= word.probability <= 1.0
        previous_end = word.end_s


async def test_speech_gives_words_with_monotonic_timings_inside_the_audio(asr: AsrHarness) -> None:
    audio = asr.speech()
    transcript = await as_transcriber(asr).transcribe(audio, CancelSignal())
    assert as_transcriber(asr).sample_rate == ASR_SAMPLE_RATE
    assert_well_formed(transcript, len(audio) / ASR_SAMPLE_RATE)
    assert len(transcript.words) >= 3
    assert transcript.text.strip()


def _silence() -> Samples:
    return np.zeros(3 * ASR_SAMPLE_RATE, dtype=np.float32)


def _noise() -> Samples:
    return (np.random.default_rng(7).standard_normal(3 * ASR_SAMPLE_RATE) * 0.003).astype(np.float32)


@pytest.mark.parametrize("make", [_silence, _noise], ids=["silence", "noise"])
async def test_silence_and_quiet_noise_give_no_words(asr: AsrHarness, make: object) -> None:
    assert callable(make)
    transcript = await as_transcriber(asr).transcribe(make(), CancelSignal())
    assert transcript.words == ()
    assert transcript.text == ""
    assert_well_formed(transcript, 3.0)


@pytest.mark.parametrize("length", [0, 160])
async def test_empty_and_tiny_input_is_handled(asr: AsrHarness, length: int) -> None:
    transcript = await as_transcriber(asr).transcribe(np.zeros(length, dtype=np.float32), CancelSignal())
    assert transcript.words == ()
    assert_well_formed(transcript, length / ASR_SAMPLE_RATE)


@pytest.mark.parametrize("rate", [8_000, 44_100])
async def test_other_sample_rates_are_resampled(asr: AsrHarness, rate: int) -> None:
    speech = asr.speech()
    audio = resample(speech, ASR_SAMPLE_RATE, rate)
    transcript = await as_transcriber(asr).transcribe(audio, CancelSignal(), sample_rate=rate)
    assert_well_formed(transcript, len(speech) / ASR_SAMPLE_RATE)
    assert len(transcript.words) >= 3


async def test_cancel_returns_within_one_segment_and_leaves_no_thread_running(asr: AsrHarness) -> None:
    transcriber = as_transcriber(asr)
    await transcriber.transcribe(asr.speech(), CancelSignal())  # warm: model loaded, worker thread started
    threads = python_threads()
    gap = np.zeros(ASR_SAMPLE_RATE, dtype=np.float32)
    long_audio = np.concatenate([asr.speech(), gap] * 8)  # several decoding windows
    signal = CancelSignal()
    before = asr.segments()
    task = asyncio.create_task(transcriber.transcribe(long_audio, signal))
    assert await until(lambda: asr.segments() > before or task.done(), bound_s=60.0)
    signal.set(User())
    at_cancel, cancelled_at = asr.segments(), time.monotonic()
    await asyncio.wait({task})
    assert task.cancelled()
    assert asr.segments() - at_cancel <= 1
    assert time.monotonic() - cancelled_at < asr.step_bound_s
    assert asr.busy() == 0
    assert python_threads() <= threads


async def test_an_already_cancelled_signal_does_no_work(asr: AsrHarness) -> None:
    signal = CancelSignal()
    signal.set(User())
    before = asr.segments()
    with pytest.raises(asyncio.CancelledError):
        await as_transcriber(asr).transcribe(asr.speech(), signal)
    assert asr.segments() == before


async def test_a_cancelled_task_still_waits_for_its_worker_thread(asr: AsrHarness) -> None:
    before = asr.segments()
    gap = np.zeros(ASR_SAMPLE_RATE, dtype=np.float32)
    task = asyncio.create_task(as_transcriber(asr).transcribe(np.concatenate([asr.speech(), gap] * 8), CancelSignal()))
    assert await until(lambda: asr.busy() > 0 or task.done(), bound_s=60.0)
    task.cancel()
    await asyncio.wait({task})
    assert task.cancelled()
    assert asr.busy() == 0  # the thread had returned before the task finished cancelling
    assert asr.segments() - before < 8
