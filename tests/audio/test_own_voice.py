"""Transcript-level echo check: Parley's own words at the moment it played them are its own voice; a user who
shares a word or two with the reply is not."""

from __future__ import annotations

from audio.own_voice import TimedWord, normalise, own_voice


def _timeline(text: str, start: float, per_word: float = 0.3) -> list[TimedWord]:
    return [TimedWord(w, start + i * per_word, start + (i + 1) * per_word) for i, w in enumerate(text.split())]


PLAYED = _timeline("Two plus two is four. Is there anything else you would like to know?", 100.0)


def test_the_reply_heard_back_through_the_room_is_own_voice() -> None:
    echo = _timeline("two plus 2 is four", 100.08)  # 80 ms acoustic path, Whisper writes a digit
    verdict = own_voice(echo, PLAYED)
    assert verdict.own
    assert verdict.share == 1.0
    assert all(0.07 <= lag <= 0.09 for _, lag in verdict.matched)


def test_a_single_word_reply_echoed_is_own_voice_but_the_same_word_later_is_the_user() -> None:
    played = _timeline("Two.", 50.0)
    assert own_voice(_timeline("Two.", 50.05), played).own
    assert not own_voice(_timeline("Two?", 51.2), played).own, "said back a second later: the user's"


def test_a_user_sharing_words_with_the_reply_is_not_own_voice() -> None:
    user = _timeline("stop what is two plus two", 100.1)  # talks over it, two of the words coincide
    verdict = own_voice(user, PLAYED)
    assert not verdict.own
    assert 0 < len(verdict.matched) < 6


def test_one_slip_in_a_long_echo_is_tolerated_and_order_matters() -> None:
    echo = _timeline("is there anything else ewe would like", 101.55)  # one word misheard
    assert own_voice(echo, PLAYED).own
    shuffled = _timeline("four is two plus two", 100.05)
    assert not own_voice(shuffled, PLAYED).own


def test_words_are_compared_without_case_punctuation_or_digit_spelling() -> None:
    assert normalise("Two.") == normalise("2") == "two"
    assert normalise("That's") == "thats"
    assert not own_voice([], PLAYED).own
