"""The bench's ear against the heard cursor (heard_word_error): numbers compared as the same word however they are
written, the cut word's fragment one word whatever the ear made of it, and a whole word kept or dropped wrongly
still counted. No models: the transcripts are the ones Whisper gave in bench runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adapters.testing_speech import FakeTranscriber
from audio.wav import save_wav
from desktop.bench.scenarios import RATE, Hearing, Run, heard_word_errors
from desktop.bench.signals import boundary_word_error, normalise

KEPT = "Once upon a time, in the year"
REPLY = "Once upon a time, in the year 1000, there lived a dragon named Lyra."


@pytest.mark.parametrize(
    ("kept", "heard"),
    [
        ("in the year 19", "in the year nineteen"),
        ("in the year nineteen", "in the year 19."),
        ("a kilogram is 1,000 grams", "a kilogram is one thousand grams"),
        ("in 1984 there was", "in nineteen eighty-four there was"),
        ("I have two cats", "I have 2 cats."),
    ],
)
def test_a_number_written_in_digits_or_words_is_the_same_word(kept: str, heard: str) -> None:
    assert boundary_word_error(kept, heard) == 0
    assert boundary_word_error(heard, kept) == 0


def test_a_number_is_one_word_as_the_cursor_counts_it() -> None:
    assert normalise("In the year 1,000,000.") == ["in", "the", "year", "1000000"]
    assert normalise("one thousand") == normalise("1000") == ["1000"]


@pytest.mark.parametrize(
    "heard",
    [
        "Once upon a time, in the year nineteen.",
        "Once upon a time in the year of 99.",
        "Once upon a time in the year, wouldn't that be?",
        "Once upon a time in the year 1,000,000",
        "Once upon a time in the year one thousand",
    ],
)
def test_whatever_the_ear_made_of_the_cut_words_fragment_is_one_word(heard: str) -> None:
    # the PulseAudio bench's cuts inside "1000", not played past its half, so not kept
    assert boundary_word_error(KEPT, heard, REPLY) == 1


def test_whole_words_played_past_the_kept_ones_each_count() -> None:
    assert boundary_word_error(KEPT, "Once upon a time in the year 1000 there", REPLY) == 2
    assert boundary_word_error(KEPT, "Once upon a time in the year 1000, there lived", REPLY) == 3
    assert boundary_word_error("there was a", "there was a drag and named", "there was a dragon named Lyra") == 2
    assert boundary_word_error("in the", "in the year 19", "in the year 1920 a king") == 2  # "year", then a fragment


def test_kept_words_the_ear_did_not_hear_still_count() -> None:
    assert boundary_word_error(KEPT + " 1000, there", "Once upon a time in the year", REPLY) == 2
    assert boundary_word_error("Once upon a time, in the", "Once upon a time in the year", REPLY) == 1


def test_a_reply_that_does_not_begin_with_the_kept_words_reads_every_word_heard() -> None:
    assert boundary_word_error(KEPT, "Once upon a time in the year, wouldn't that be?", "Hello there.") == 3
    assert boundary_word_error(KEPT, "Once upon a time in the year, wouldn't that be?") == 3


@pytest.mark.anyio
async def test_the_fixture_runs_ear_reads_past_the_cut_against_the_reply_the_model_wrote(tmp_path: Path) -> None:
    """The scenario's report keeps each turn's generated text: the words played past the kept ones are read
    against it, as on PulseAudio, not each counted as an error."""
    tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(RATE) / RATE)
    save_wav(tmp_path / "output.wav", np.concatenate([np.zeros(RATE // 2), tone, np.zeros(RATE)]), RATE)
    timeline = {"turns": {"1": {"first_audio_s": 0.5, "silent_s": 1.5}}, "says": [{"what": "typed", "at_s": 1.2}]}
    kept = {"type": "assistant/message", "turn": 1, "step": 1, "text": "The weather today", "interrupted": True}
    generated = [{"turn": 1, "generated": "The weather today is sunny and warm."}]
    ear = FakeTranscriber("The weather today is zzz qqq")
    run = Run(tmp_path, [kept], {"timeline": timeline, "turns": generated})
    (heard,) = await heard_word_errors(run, Hearing(ear, ear))
    assert heard.error == 2, "'is' was the reply's next word, 'zzz qqq' what the ear made of the cut 'sunny'"
    unknown = Run(tmp_path, [kept], {"timeline": timeline, "turns": []})
    assert [h.error for h in await heard_word_errors(unknown, Hearing(ear, ear))] == [3]
