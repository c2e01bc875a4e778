"""Model-free units of the speech adapters: resampling, alignment, the worker, incremental transcription."""

# ruff: noqa: RUF001  (IPA phoneme symbols are the subject of the alignment tests)

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from adapters.asr.incremental import IncrementalTranscriber
from adapters.contract.cancel import CancelSignal, User
from adapters.contract.pcm import resample, to_mono_float32
from adapters.contract.speech_io import ASR_SAMPLE_RATE
from adapters.contract.workers import Worker
from adapters.testing_speech import FakeTranscriber
from adapters.tts.alignment import Phone, Token, align, is_sounded, phones_of, proportional
from tests.conformance.speech_harness import until


def test_resampling_keeps_duration_and_pitch() -> None:
    rate = 22_050
    t = np.arange(rate) / rate
    tone = np.sin(2 * np.pi * 440 * t).astype(np.float32)
    out = resample(tone, rate, ASR_SAMPLE_RATE)
    assert len(out) == ASR_SAMPLE_RATE
    peak_hz = np.argmax(np.abs(np.fft.rfft(out))) * ASR_SAMPLE_RATE / len(out)
    assert peak_hz == pytest.approx(440, abs=2)
    assert resample(tone, rate, rate) is tone


def test_integer_and_stereo_pcm_become_mono_float() -> None:
    stereo = np.array([[32767, -32768], [0, 0]], dtype=np.int16)
    mono = to_mono_float32(stereo)
    assert mono.dtype == np.float32
    assert mono.tolist() == pytest.approx([-0.5 / 32768, 0.0], abs=1e-4)


def test_sounded_phonemes_exclude_markers_spaces_and_punctuation() -> None:
    assert [is_sounded(s) for s in ["^", "$", "_", " ", ",", ".", "ˈ", "ɑ", "aɪ"]] == [False] * 6 + [True] * 3
    assert phones_of([("^", 10), ("h", 5), (" ", 3), ("i", 4)]) == [Phone("h", 10, 15), Phone("i", 18, 22)]


def test_alignment_splits_words_that_were_spoken_run_together() -> None:
    tokens = [Token(0, 1, ("a", "ɪ")), Token(2, 4, ("ˈ", "æ", "m")), Token(5, 10, ("ɡ", "ˈ", "o", "ʊ"))]
    spoken = [
        ("^", 100),
        ("a", 10),
        ("ɪ", 10),
        ("ɐ", 10),
        ("m", 10),
        (" ", 5),
        ("ɡ", 10),
        ("ˌ", 1),
        ("o", 10),
        ("ʊ", 10),
    ]
    spans, ratio = align(tokens, phones_of(spoken))
    assert [(s.token, s.start, s.end) for s in spans] == [(0, 100, 120), (1, 120, 140), (2, 145, 176)]
    assert 0.5 < ratio < 1.0


def test_the_proportional_estimate_shares_the_audio_by_characters() -> None:
    spans = proportional([Token(0, 1, ()), Token(2, 5, ())], 400)
    assert [(s.start, s.end) for s in spans] == [(0, 100), (100, 400)]


@pytest.mark.anyio
async def test_a_cancelled_task_waits_for_its_worker_job() -> None:
    worker = Worker("test-worker")
    started, released = threading.Event(), threading.Event()

    def job(stop: threading.Event) -> str:
        started.set()
        stop.wait(5)
        released.set()
        return "done"

    task = asyncio.create_task(worker.run(job, CancelSignal()))
    assert await until(started.is_set)
    task.cancel()
    await asyncio.wait({task})
    assert task.cancelled()
    assert released.is_set()
    assert worker.active == 0


def _speech(seconds: float) -> np.ndarray:
    return (0.3 * np.sin(np.arange(int(seconds * ASR_SAMPLE_RATE)) / 5)).astype(np.float32)


@pytest.mark.anyio
async def test_incremental_passes_are_rate_limited_and_the_final_reuses_a_covering_pass() -> None:
    fake = FakeTranscriber(step_s=0.001)
    partials: list[str] = []
    incremental = IncrementalTranscriber(fake, interval_s=0.2, on_partial=lambda t: partials.append(t.text))
    signal = CancelSignal()
    runner = asyncio.create_task(incremental.run(signal))
    for _ in range(20):
        incremental.append(_speech(0.05))
        await asyncio.sleep(0.01)
    assert await until(lambda: incremental.covered_s == pytest.approx(1.0))
    incremental.append(np.zeros(ASR_SAMPLE_RATE // 2, dtype=np.float32))  # the VAD's hang-over silence
    final = await incremental.finish(signal)
    await runner
    assert 1 <= incremental.passes <= 4
    assert final.words
    assert partials
    assert incremental.reused_final


@pytest.mark.anyio
async def test_the_final_pass_reruns_when_speech_came_after_the_last_pass() -> None:
    fake = FakeTranscriber(step_s=0.001)
    incremental = IncrementalTranscriber(fake, interval_s=10.0)
    signal = CancelSignal()
    runner = asyncio.create_task(incremental.run(signal))
    incremental.append(_speech(0.5))
    assert await until(lambda: incremental.passes == 1)
    incremental.append(_speech(0.5))
    final = await incremental.finish(signal)
    await runner
    assert not incremental.reused_final
    assert incremental.passes == 2
    assert final.duration_s == pytest.approx(1.0)


@pytest.mark.anyio
async def test_the_incremental_loop_ends_when_the_signal_fires() -> None:
    incremental = IncrementalTranscriber(FakeTranscriber(), interval_s=0.1)
    signal = CancelSignal()
    runner = asyncio.create_task(incremental.run(signal))
    await asyncio.sleep(0)
    signal.set(User())
    await asyncio.wait({runner})
    assert runner.done()
    assert runner.exception() is None
    assert incremental.latest is None
