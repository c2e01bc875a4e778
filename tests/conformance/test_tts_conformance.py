"""The `Synthesizer` contract, proven for Piper and for the fake alike (no skips)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import numpy as np
import pytest

from adapters.contract.cancel import CancelSignal, User
from adapters.contract.speech_io import SpeechText, SynthSegment
from tests.conformance.speech_harness import TTS_HARNESSES, TtsHarness, as_synthesizer, python_threads, until

pytestmark = pytest.mark.anyio
REAL = {"piper"}
REPLY = "Well, here is the plan. First we boil the water! Then we add the tea, and wait. Is that all? Yes."
LONG = " ".join(f"This is sentence number {n}, and it goes on for a little while." for n in range(1, 30))


@pytest.fixture(params=[pytest.param(n, marks=[pytest.mark.slow] if n in REAL else []) for n in sorted(TTS_HARNESSES)])
def tts(request: pytest.FixtureRequest) -> TtsHarness:
    return TTS_HARNESSES[request.param]()


async def collect(harness: TtsHarness, text: SpeechText, signal: CancelSignal | None = None) -> list[SynthSegment]:
    return [segment async for segment in as_synthesizer(harness).stream(text, signal or CancelSignal())]


def assert_well_formed(segment: SynthSegment, sample_rate: int) -> None:
    assert segment.sample_rate == sample_rate
    assert segment.audio.dtype == np.int16
    assert segment.audio.ndim == 1
    assert len(segment.audio) > 0
    previous_end_ms, previous_end_char = 0.0, 0
    for word in segment.words:
        assert previous_end_char <= word.start < word.end <= len(segment.text)
        assert not any(char.isspace() for char in segment.text[word.start : word.end])
        assert previous_end_ms <= word.start_ms <= word.end_ms <= segment.duration_ms + 0.5
        previous_end_ms, previous_end_char = word.end_ms, word.end


async def test_text_becomes_segments_whose_words_are_timed_inside_their_audio(tts: TtsHarness) -> None:
    segments = await collect(tts, REPLY)
    assert len(segments) >= 3
    assert "".join(segment.text for segment in segments) == REPLY
    assert [segment.index for segment in segments] == list(range(len(segments)))
    for segment in segments:
        assert_well_formed(segment, as_synthesizer(tts).sample_rate)
        assert [segment.text[w.start : w.end] for w in segment.words] == segment.text.split()


async def test_each_item_of_an_iterable_is_one_segment(tts: TtsHarness) -> None:
    items = ["Hello there, my friend.", " How are you today?"]

    async def streamed() -> AsyncIterator[str]:
        for item in items:
            yield item

    for text in (items, streamed()):
        segments = await collect(tts, text)
        assert [segment.text for segment in segments] == items


async def test_markup_is_not_read_but_timings_point_into_the_source(tts: TtsHarness) -> None:
    source = "**Bold** move, `code` here 🎉 and [a link](https://example.com)."
    (segment,) = await collect(tts, [source])
    assert [source[w.start : w.end] for w in segment.words] == [
        "Bold",
        "move,",
        "code",
        "here",
        "and",
        "a",
        "link](https://example.com).",
    ]
    assert_well_formed(segment, segment.sample_rate)


@pytest.mark.parametrize("text", ["", "   \n\t ", "**  **", "🎉🎉"], ids=["empty", "whitespace", "markup", "emoji"])
async def test_nothing_speakable_gives_no_segments(tts: TtsHarness, text: str) -> None:
    assert await collect(tts, text) == []
    assert await collect(tts, [text]) == []


async def test_cancel_mid_segment_ends_the_stream_within_one_step_with_no_thread_left(tts: TtsHarness) -> None:
    await collect(tts, "Warm up.")  # voice loaded, worker thread started
    threads = python_threads()
    signal = CancelSignal()
    seen: list[SynthSegment] = []
    after_cancel: list[SynthSegment] = []
    stream = as_synthesizer(tts).stream(LONG, signal)

    async def consume() -> None:
        async for segment in stream:
            (after_cancel if signal.cancelled else seen).append(segment)

    task = asyncio.create_task(consume())
    assert await until(lambda: bool(seen) and tts.busy() > 0, bound_s=60.0)
    signal.set(User())
    cancelled_at = time.monotonic()
    await asyncio.wait({task})
    assert task.exception() is None
    assert time.monotonic() - cancelled_at < tts.step_bound_s
    assert after_cancel == []
    assert tts.busy() == 0
    assert python_threads() <= threads


async def test_a_consumer_that_walks_away_leaves_no_worker_running(tts: TtsHarness) -> None:
    stream = as_synthesizer(tts).stream(LONG, CancelSignal())

    async def consume() -> None:
        async for _segment in stream:
            pass

    task = asyncio.create_task(consume())
    assert await until(lambda: tts.busy() > 0 or task.done(), bound_s=60.0)
    task.cancel()
    await asyncio.wait({task})
    assert task.cancelled()
    assert tts.busy() == 0


async def test_an_already_cancelled_signal_yields_nothing(tts: TtsHarness) -> None:
    signal = CancelSignal()
    signal.set(User())
    assert await collect(tts, REPLY, signal) == []
    assert tts.busy() == 0
