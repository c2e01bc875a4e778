"""SPEC §6: from a playback report to the exact words heard."""

from __future__ import annotations

import pytest

from engine.heard import heard_of
from engine.speech import SpeechKey, SpokenSegment, WordTiming

KEY = SpeechKey(1, 1, 1)


def _segment(index: int, text: str, played_ms: float, ms_per_word: float = 200) -> SpokenSegment:
    words, at = [], 0
    for n, word in enumerate(text.split()):
        start = text.index(word, at)
        at = start + len(word)
        words.append(WordTiming(start, at, n * ms_per_word, (n + 1) * ms_per_word))
    return SpokenSegment(KEY, index, text, tuple(words), len(words) * ms_per_word, played_ms)


def test_fully_played_segments_are_heard_whole() -> None:
    heard = heard_of([_segment(0, "Hello there. ", 400), _segment(1, "How are you?", 600)])
    assert heard.text == "Hello there. How are you?"
    assert heard.complete
    assert heard.heard_ms == 1000


def test_a_cut_segment_keeps_the_words_more_than_half_played() -> None:
    heard = heard_of([_segment(0, "Hello there. ", 400), _segment(1, "How are you?", 310)])
    assert heard.text == "Hello there. How are"
    assert not heard.complete


def test_a_word_half_played_or_less_is_not_heard() -> None:
    assert heard_of([_segment(0, "Alpha beta", 300)]).text == "Alpha"
    assert heard_of([_segment(0, "Alpha beta", 301)]).text == "Alpha beta"


def test_nothing_played_means_nothing_heard() -> None:
    heard = heard_of([_segment(0, "Never heard.", 0), _segment(1, "Nor this.", 0)])
    assert heard.text == ""
    assert not heard.complete


def test_punctuation_inside_the_heard_span_is_kept_and_order_is_by_index() -> None:
    heard = heard_of([_segment(1, "second part", 0), _segment(0, "First, quickly: ", 400)])
    assert heard.text == "First, quickly:"


@pytest.mark.anyio
async def test_silent_speech_keeps_a_space_said_on_its_own() -> None:
    """A model streams " " and "56" as two pieces: the words heard read "is 56", not "is56"."""
    from adapters.contract import CancelSignal
    from engine.silent_speech import SilentSpeech
    from engine.testing import VirtualClock

    clock = VirtualClock()
    speech = SilentSpeech(clock)
    for piece in ("Half of a hundred is", " ", "56", "."):
        await speech.say(KEY, piece, CancelSignal())
    await clock.advance(10.0)
    assert heard_of(speech.report(1)).text == "Half of a hundred is 56."
