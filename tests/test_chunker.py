"""The pure text side of speech: segmenting a streamed reply and deciding what is read aloud."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.tts.chunker import MARK_GOES_ON, PHRASE_OPENERS, SETTLED_MARKS, SpeechChunker, SpeechSegment
from adapters.tts.speakable import to_speakable


def chunk(text: str, step: int | None = None, **options: int | bool | None) -> list[str]:
    chunker = SpeechChunker(**options)  # type: ignore[arg-type]
    size = step or len(text) or 1
    segments: list[SpeechSegment] = []
    for at in range(0, len(text), size):
        segments += chunker.feed(text[at : at + size])
    return [segment.text for segment in [*segments, *chunker.flush()]]


def test_the_first_segment_ends_at_the_first_clause_with_three_words() -> None:
    assert chunk("Sure, well, the answer is simple: tea. More later.") == [
        "Sure, well, the answer is simple:",
        " tea.",
        " More later.",
    ]


@pytest.mark.parametrize("step", [1, 3, None])
def test_a_reply_may_begin_with_its_first_phrase(step: int | None) -> None:
    """The first audio waits for two words of the model instead of a whole sentence."""
    assert chunk("The time is 9:02 PM. Bye.", step, first_phrase=True) == ["The time", " is 9:02 PM.", " Bye."]
    assert chunk("You can set an alarm for seven.", step, first_phrase=True) == ["You can set an alarm", " for seven."]
    assert chunk("The time is 9:02 PM. Bye.", step) == ["The time is 9:02 PM.", " Bye."], "only where asked"


@pytest.mark.parametrize(
    ("text", "first", "phrase"),
    [
        ("It is a nice day. Yes.", "It is a nice day.", False),  # one word before the verb is no phrase of its own
        ("Sure, the answer is tea.", "Sure, the answer", True),  # "Sure," alone is too short a clause
        ("Once upon a time, in the land of Eldrador.", "Once upon a time,", False),  # a clause came first
        ("The island isles are big.", "The island isles", True),  # "is" inside a word opens nothing
        ("The capital of France is Paris.", "The capital of France", True),  # "of" binds to the word before
        ("Hello there — is it you?", "Hello there — is it you?", False),  # no cut after punctuation
        (
            "One two three four five six seven eight and nine.",
            "One two three four five six seven eight and nine.",
            False,
        ),
    ],
)
def test_the_first_phrase_ends_before_a_word_that_opens_the_next(text: str, first: str, phrase: bool) -> None:
    segments = SpeechChunker(first_phrase=True).feed(text + " ")
    assert (segments[0].text, segments[0].phrase) == (first, phrase)


def test_a_phrase_boundary_is_taken_as_its_opening_word_comes() -> None:
    """A model's token " is" is the word "is": the first audio does not wait for the token after it."""
    chunker = SpeechChunker(first_phrase=True)
    assert chunker.feed("The time") == []
    assert chunker.feed(" is") == [SpeechSegment("The time", 0, phrase=True)]
    assert chunker.feed(" 9:02 PM. And") == [SpeechSegment(" is 9:02 PM.", 8)]
    assert SpeechChunker(first_phrase=True).feed("The island") == [], "a whole word that is no opener opens nothing"


def test_later_segments_end_only_at_sentence_ends() -> None:
    assert chunk("One two three. Four, five, six, seven; eight. Nine!") == [
        "One two three.",
        " Four, five, six, seven; eight.",
        " Nine!",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Ask Dr. Smith and Mrs. Jones about it.",
        "Use a kettle, e.g. an electric one.",
        "The U.S. team won.",
        "Pi is 3.14159 roughly.",
        "Visit https://example.com/a.b?c=d.e now.",
        "Mail bob.smith@example.co.uk today.",
        "J. R. R. Tolkien wrote it.",
    ],
)
def test_abbreviations_decimals_urls_and_emails_stay_whole(text: str) -> None:
    assert chunk(text, first_clause_words=None) == [text]
    assert chunk(text, step=1, first_clause_words=None) == [text]


def test_numbered_and_bulleted_lists_split_per_item_not_after_the_number() -> None:
    text = "Steps:\n1. Boil water.\n2. Add tea\n- Wait **three** minutes"
    assert chunk(text, first_clause_words=None) == [
        "Steps:",
        "\n1. Boil water.",
        "\n2. Add tea",
        "\n- Wait **three** minutes",
    ]


def test_a_boundary_waits_for_the_next_character() -> None:
    chunker = SpeechChunker(first_clause_words=None)
    assert chunker.feed("It costs 3.") == []
    assert chunker.feed("50 dollars. And") == [SpeechSegment("It costs 3.50 dollars.", 0)]
    assert chunker.flush() == [SpeechSegment(" And", 22)]


def test_unspeakable_pieces_lead_the_next_segment_and_a_silent_tail_is_dropped() -> None:
    assert chunk("🎉\nHello there. **") == ["🎉\nHello there."]


def test_text_without_punctuation_is_cut_at_a_space_within_the_bound() -> None:
    text = "word " * 200
    segments = chunk(text.strip(), max_chars=50)
    assert all(len(segment) <= 50 for segment in segments)
    assert "".join(segments) == text.strip()
    assert all(not segment.strip().endswith("wor") for segment in segments)


def test_the_first_segment_ends_at_a_mark_after_a_word_without_waiting() -> None:
    """The model's next token is no longer waited for: it cannot take the comma into a word."""
    chunker = SpeechChunker()
    assert chunker.feed("Once upon a time,") == [SpeechSegment("Once upon a time,", 0)]
    assert chunker.feed(" there was a dragon, and") == [], "later segments end at sentence ends only"
    assert SpeechChunker().feed("Hi!") == [SpeechSegment("Hi!", 0)]


@pytest.mark.parametrize("text", ["Now it costs 3,", "Two words,", "See x.org/a?", "Mail a@b,", "Use snake_case,"])
def test_a_mark_after_a_number_an_address_or_too_few_words_still_waits(text: str) -> None:
    assert SpeechChunker().feed(text) == []


def test_a_closer_or_mark_that_came_with_it_stays_in_the_first_segment() -> None:
    assert chunk('"Hello there friend," she said. Yes.') == ['"Hello there friend,"', " she said.", " Yes."]
    assert chunk("Wow, really?! Yes.") == ["Wow, really?!", " Yes."]


def _cut_before_what_followed(parts: list[str]) -> bool:
    """A delta ended where the streamed chunker may end the first segment without the next character, and that
    character would have moved the end: a closer or mark after a settled mark, or a letter after an opening
    word ("is" + "land"). Whole, the text is cut where that character says."""
    text = "".join(parts)
    for at in itertools.accumulate(len(part) for part in parts):
        if not 2 <= at < len(text):
            continue
        head, after = text[:at], text[at]
        settled = head[-2].isalpha() and head[-1] in SETTLED_MARKS and after in MARK_GOES_ON
        word = re.search(r"(\S+)$", head)
        opener = word is not None and word.group(1) in PHRASE_OPENERS and not after.isspace()
        if settled or opener:
            return True
    return False


ALPHABET = st.sampled_from([*"ab .,;:!?\n-*`#1230", "Dr.", "e.g.", "3.14", " - ", "🎉", "**", " is ", " in", "and"])


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.lists(ALPHABET, max_size=12).map("".join), max_size=12),
    max_chars=st.integers(8, 80),
    first_phrase=st.booleans(),
)
def test_segments_are_an_exact_prefix_however_the_deltas_fall(
    parts: list[str], max_chars: int, first_phrase: bool
) -> None:
    text = "".join(parts)
    streamed = SpeechChunker(max_chars=max_chars, first_phrase=first_phrase)
    segments = [s for part in parts for s in streamed.feed(part)] + streamed.flush()
    joined = "".join(segment.text for segment in segments)
    assert text.startswith(joined)
    assert not to_speakable(text[len(joined) :]).has_words
    assert [s.start for s in segments] == [sum(len(x.text) for x in segments[:i]) for i in range(len(segments))]
    assert all(segment.speakable.has_words for segment in segments)
    if not _cut_before_what_followed(parts):
        assert [s.text for s in segments] == chunk(text, max_chars=max_chars, first_phrase=first_phrase)
    assert all(len(s.text) - s.speakable.first_word_at() <= max_chars for s in segments)
    assert not any(s.phrase for s in segments[1:]), "only a reply's first segment may be a phrase"


@pytest.mark.parametrize(
    ("source", "spoken_words"),
    [
        ("**Bold** and __strong__ and *em* and _it_", ["Bold", "and", "strong", "and", "em", "and", "it"]),
        ("Run `pip install` now", ["Run", "pip", "install", "now"]),
        ("# Title\n## Sub", ["Title", "Sub"]),
        ("- one\n* two\n+ three\n1. four", ["one", "two", "three", "1.", "four"]),
        ("See [the docs](https://x.org/a) ok", ["See", "the", "docs", "ok"]),
        ("Great job 🎉👍🏽! ❤️ 100°C ©", ["Great", "job", "!", "100°C", "©"]),
        ("2 * 3 and snake_case", ["2", "*", "3", "and", "snake_case"]),
        ("> quoted\n---\n```python\nx = 1\n```", ["quoted", "x", "=", "1"]),
    ],
)
def test_markup_and_emoji_are_not_read_aloud(source: str, spoken_words: list[str]) -> None:
    assert to_speakable(source).spoken.split() == spoken_words


def test_spoken_words_map_back_to_their_source_characters() -> None:
    source = "**Bold** move, see [docs](https://x.org) 🎉 now."
    speakable = to_speakable(source)
    mapped = [source[slice(*speakable.source_span(s, e))] for s, e in speakable.words()]
    assert mapped == ["Bold", "move,", "see", "docs", "now."]
    assert all(
        source[origin] == char for origin, char in zip(speakable.origin, speakable.spoken, strict=True) if char != " "
    )
