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


def _voice(gap_ms: float) -> tuple[VirtualClock, RecordingSink, VoiceOutput]:
    clock = VirtualClock()
    sink = RecordingSink(clock, rate=16_000, latency_s=0.03)
    return clock, sink, VoiceOutput(FakeSynthesizer(ms_per_char=20, gap_ms=gap_ms), sink, clock)


async def test_played_words_are_timed_in_order_and_outlive_their_turn() -> None:
    clock, sink, voice = _voice(gap_ms=40)
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
    clock, sink, voice = _voice(gap_ms=40)
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


async def test_a_reply_begins_with_its_first_phrase_and_keeps_only_a_breath_after_it() -> None:
    """ "The time" is spoken while the model still writes the rest; its closing quiet is cut, the words stay exact."""
    clock, sink, voice = _voice(gap_ms=120)
    async with clock.autojump():
        await sink.start()
        started = clock.now()
        await voice.say(SpeechKey(1, 1, 1), "The time is ", CancelSignal())
        first = voice.report(1)
        await voice.say(SpeechKey(1, 1, 1), "nine. Bye.", CancelSignal())
        await voice.drain(1, CancelSignal())
        report = voice.report(1)
        words = voice.played_words(since=started)
        await sink.close()
    assert [s.text for s in first] == ["The time"], "spoken before the sentence is complete"
    assert [s.text for s in report] == ["The time", " is nine.", " Bye."]
    phrase = report[0]
    assert phrase.duration_ms <= phrase.words[-1].end_ms + 50, "40 ms of the 120 ms quiet after 'time' are kept"
    assert report[1].duration_ms > report[1].words[-1].end_ms + 100, "a sentence keeps its closing quiet"
    assert [w.text for w in words] == "The time is nine. Bye.".split()
    assert all(abs(s.played_ms - s.duration_ms) < 1 for s in report), [(s.played_ms, s.duration_ms) for s in report]


async def test_a_reply_opens_on_its_first_sound_and_later_segments_keep_their_lead() -> None:
    """The synthesizer opens every text with 120 ms of quiet: before a reply's first word it is only a wait."""
    clock, sink, voice = _voice(gap_ms=120)
    async with clock.autojump():
        await sink.start()
        started = clock.now()
        await voice.say(SpeechKey(1, 1, 1), "Hello there. Bye now.", CancelSignal())
        await voice.drain(1, CancelSignal())
        report = voice.report(1)
        words = voice.played_words(since=started)
        await sink.close()
    assert [s.text for s in report] == ["Hello there.", " Bye now."]
    assert report[0].words[0].start_ms <= 10, "a breath of the opening quiet is kept, not 120 ms"
    assert report[1].words[0].start_ms >= 119, "inside a reply the quiet between sentences stays"
    assert words[0].start - started < 0.03 + 0.05, "audible after the latency and the synthesis, not 120 ms later"
