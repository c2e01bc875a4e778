"""The everyday questions' answer matching: numbers as digits or words, whole words, any case; and the date and time
answers follow the wall clock the prompt is given."""

from __future__ import annotations

import datetime as dt

import pytest

from desktop.bench.everyday_match import holds, words
from desktop.bench.everyday_questions import WALL, everyday_questions
from engine.prompt import now_sentence


@pytest.mark.parametrize(
    ("reply", "accepted"),
    [
        ("Seven times eight is fifty-six.", "56"),
        ("Seven times eight is 56.", "56"),
        ("Seven times eight is56.", "56"),  # a space lost between a word and a number
        ("There are a hundred and twenty minutes in two hours.", "120"),
        ("One thousand grams.", "1000"),
        ("A kilogram is 1,000 grams.", "1000"),
        ("It's two thousand twenty-five.", "2025"),
        ("It's twenty twenty-five.", "20 25"),
        ("Today is the fourteenth of March.", "14 of March"),
        ("It's March 14th.", "March 14"),
        ("It is twenty to five in the afternoon.", "20 to 5"),
        ("It's 4:40 PM.", "4:40"),
        ("THE CAPITAL IS PARIS!", "Paris"),
        ("It\u2019s Ottawa, isn't it?", "ottawa"),
    ],
)
def test_a_right_answer_is_found_however_it_is_said(reply: str, accepted: str) -> None:
    assert holds(reply, [accepted])


@pytest.mark.parametrize(
    ("reply", "accepted"),
    [
        ("Seven times eight is 156.", "56"),  # digits are a whole number
        ("Seven times eight is fifty-four.", "56"),
        ("Romeo and Juliet.", "Rome"),  # words are whole words
        ("Twelve plus nine is twenty.", "21"),
        ("Today is the 4th of March.", "14 March"),
        ("", "Paris"),
    ],
)
def test_a_wrong_answer_is_not_found(reply: str, accepted: str) -> None:
    assert not holds(reply, [accepted])


def test_any_one_accepted_form_is_enough() -> None:
    assert holds("March the fourteenth", ["14 March", "March 14", "March the 14"])
    assert not holds("March", ["14 March", "March 14"])


def test_number_words_read_as_numbers_one_at_a_time() -> None:
    assert words("Nineteen ninety-nine, two oh five, one hundred and one") == [
        "19", "99", "2", "oh", "5", "101"
    ]  # fmt: skip


def test_the_date_and_time_answers_are_what_the_prompt_says_of_the_wall_clock() -> None:
    wall = dt.datetime(2024, 12, 31, 9, 5, tzinfo=dt.UTC)  # a Tuesday morning, the year's last
    asked = {item.question: item.accepted for item in everyday_questions(wall)}
    assert now_sentence(wall).startswith("Today is Tuesday, 31 December 2024. The time is 9:05 AM")
    assert asked["What day is it today?"] == ("Tuesday",)
    assert asked["What day is it tomorrow?"] == ("Wednesday",)
    assert "31 December" in asked["What's the date today?"]
    assert "2024" in asked["What year is it?"]
    assert {"9:05", "5 past 9"} <= set(asked["What time is it?"])
    default = {item.question: item.accepted for item in everyday_questions()}
    assert default["What day is it today?"] == (f"{WALL:%A}",)
    assert "20 to 5" in default["What time is it?"]


def test_twenty_questions_of_every_kind_the_first_five_one_of_each() -> None:
    items = everyday_questions()
    assert len(items) == 20
    kinds = {"arithmetic", "capital", "date", "units", "recall"}
    assert {item.kind for item in items[:5]} == kinds
    assert all(len(item.said) == 2 for item in items if item.kind == "recall")
    assert all(item.accepted for item in items)
