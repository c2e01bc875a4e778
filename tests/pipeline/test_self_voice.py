"""An utterance that is the words Parley was playing at that moment is its echo; a user sharing a word is not."""

from __future__ import annotations

from adapters.contract.speech_io import Transcript, Word
from audio.own_voice import TimedWord
from audio.turns.self_voice import echo_of_parley, evidence

PLAYED = [TimedWord(w, 10.0 + 0.3 * n, 10.25 + 0.3 * n) for n, w in enumerate("Two plus two is four.".split())]


def _transcript(words: list[tuple[str, float]]) -> Transcript:
    return Transcript(" ".join(w for w, _ in words), tuple(Word(w, s, s + 0.2, 0.9) for w, s in words), 0.0, "en", 3.0)


def _played(since: float) -> list[TimedWord]:
    return [w for w in PLAYED if w.start >= since]


def test_the_echo_of_what_was_playing_is_parleys_own_voice() -> None:
    heard = _transcript([("two", 0.1), ("plus", 0.4), ("two", 0.7)])  # audio from 9.95: 40-150 ms behind
    verdict = echo_of_parley(heard, 9.95, _played)
    assert verdict is not None
    fields = evidence(verdict, heard)
    assert [m["word"] for m in fields["matched"]] == ["two", "plus", "two"]
    assert fields["share"] == 1.0


def test_a_single_word_echo_is_caught_too() -> None:
    assert echo_of_parley(_transcript([("Two.", 0.1)]), 9.95, _played) is not None


def test_a_user_sharing_a_word_is_not_parley() -> None:
    heard = _transcript([("stop", 0.1), ("what", 0.4), ("is", 0.7), ("two", 0.9)])
    assert echo_of_parley(heard, 10.5, _played) is None


def test_the_same_words_said_long_after_are_the_user() -> None:
    heard = _transcript([("two", 0.1), ("plus", 0.4), ("two", 0.7)])
    assert echo_of_parley(heard, 14.0, _played) is None


def test_nothing_playing_means_nothing_to_match() -> None:
    assert echo_of_parley(_transcript([("two", 0.1)]), 9.95, lambda since: []) is None
