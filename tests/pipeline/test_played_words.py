"""What Parley was saying, and when: the word timeline the echo check compares an utterance with."""

from __future__ import annotations

import itertools

import pytest

from adapters.contract import CancelSignal
from adapters.testing_speech import FakeSynthesizer
from audio.fixtures import RecordingSink
from desktop.pipeline.voice_output import VoiceOutput
from engine.speech import SpeechKey
from engine.testing import VirtualClock

pytestmark = pytest.mark.anyio

TEXT = "Once upon a time there was a lighthouse."


async def test_played_words_are_timed_in_order_and_outlive_their_turn() -> None:
    clock = VirtualClock()
    sink = RecordingSink(clock, rate=16_000, latency_s=0.03)
    voice = VoiceOutput(FakeSynthesizer(ms_per_char=20, gap_ms=40), sink, clock)
    async with clock.autojump():
        await sink.start()
        started = clock.now()
        await voice.say(SpeechKey(1, 1, 1), TEXT, CancelSignal())
        await voice.drain(1, CancelSignal())
        words = voice.played_words(since=started)
        voice.release(1)
        after_release = voice.played_words(since=started)
        await sink.close()
    assert [w.text for w in words] == TEXT.split()
    assert all(a.start < b.start for a, b in itertools.pairwise(words))
    assert words[0].start >= started + 0.03, "audible only after the device's latency"
    assert all(w.start <= w.end for w in words)
    assert after_release == words, "the echo of a reply can be heard after its turn ended"


async def test_a_stopped_reply_has_only_the_words_that_played() -> None:
    clock = VirtualClock()
    sink = RecordingSink(clock, rate=16_000, latency_s=0.03)
    voice = VoiceOutput(FakeSynthesizer(ms_per_char=20, gap_ms=40), sink, clock)
    async with clock.autojump():
        await sink.start()
        started = clock.now()
        await voice.say(SpeechKey(1, 1, 1), TEXT + " The keeper", CancelSignal())  # the first sentence is complete
        await clock.sleep(0.5)
        voice.silence(1)
        await clock.sleep(1.0)
        words = voice.played_words(since=started)
        await sink.close()
    assert 0 < len(words) < len(TEXT.split())
    assert [w.text for w in words] == TEXT.split()[: len(words)]
    assert words[-1].start <= started + 0.5
