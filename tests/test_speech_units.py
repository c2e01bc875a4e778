"""Model-free units of the speech adapters: resampling, alignment, the worker, incremental transcription."""

# ruff: noqa: RUF001  (IPA phoneme symbols are the subject of the alignment tests)

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from adapters.contract.cancel import CancelSignal
from adapters.contract.speech_io import ASR_SAMPLE_RATE
from adapters.runtime.pcm import resample, to_mono_float32
from adapters.runtime.workers import Worker
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
