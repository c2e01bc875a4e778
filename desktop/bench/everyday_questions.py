"""The everyday questions: short spoken-style questions with answers that can be checked, the kind a person asks a
voice companion first. The date and time answers are read off the very sentence the system prompt gives the model
for the injected wall clock, so they are what it was told.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from engine.prompt import now_sentence

WALL = dt.datetime(2025, 3, 14, 16, 40, tzinfo=dt.timezone(dt.timedelta(hours=1), "CET"))  # a Friday afternoon
_SENTENCE = re.compile(r"Today is (\w+), (\d+) (\w+) (\d+)\. The time is (\d+):(\d\d) (AM|PM)")


@dataclass(frozen=True)
class Item:
    """The user's turns (earlier ones set up a recall; the last is the question scored) and the forms of a right
    answer, any one of which the reply must hold (see desktop.bench.everyday_match)."""

    kind: str
    said: tuple[str, ...]
    accepted: tuple[str, ...]

    @property
    def question(self) -> str:
        return self.said[-1]


def _ask(kind: str, question: str, *accepted: str) -> Item:
    return Item(kind, (question,), accepted)


FIXED = (
    _ask("arithmetic", "What's seven times eight?", "56"),
    _ask("arithmetic", "What is twelve plus nine?", "21"),
    _ask("arithmetic", "How much is a hundred minus thirty-five?", "65"),
    _ask("arithmetic", "What's half of fifty?", "25"),
    _ask("arithmetic", "What's ten divided by two?", "5"),
    _ask("capital", "What's the capital of France?", "Paris"),
    _ask("capital", "What's the capital of Japan?", "Tokyo"),
    _ask("capital", "What is the capital city of Italy?", "Rome"),
    _ask("capital", "Do you know the capital of Canada?", "Ottawa"),
    _ask("units", "How many minutes are in two hours?", "120"),
    _ask("units", "How many centimetres are in a metre?", "100"),
    _ask("units", "How many grams are in a kilogram?", "1000"),
    Item("recall", ("My name is Sam.", "What's my name?"), ("Sam",)),
    Item("recall", ("Tell me a joke about penguins.", "What did I just ask you about?"), ("penguin", "penguins")),
    Item("recall", ("I'm flying to Lisbon next week.", "Where did I say I'm flying to?"), ("Lisbon",)),
)


def everyday_questions(wall: dt.datetime = WALL) -> tuple[Item, ...]:
    """Every question, the date and time ones for `wall`: twenty, each kind spread through the list."""
    today, tomorrow = _told(wall), _told(wall + dt.timedelta(days=1))
    day, month, year = today["day"], today["month"], today["year"]
    dates = (f"{day} {month}", f"{month} {day}", f"{day} of {month}", f"{month} the {day}")
    timely = (
        _ask("date", "What day is it today?", today["weekday"]),
        _ask("date", "What's the date today?", *dates),
        _ask("time", "What time is it?", *_times(wall)),
        _ask("date", "What year is it?", year, f"{year[:2]} {year[2:]}"),
        _ask("date", "What day is it tomorrow?", tomorrow["weekday"]),
    )
    return _interleave(FIXED[:5], FIXED[5:9], timely, FIXED[9:12], FIXED[12:])


def _told(wall: dt.datetime) -> dict[str, str]:
    """What the prompt's date sentence says of `wall`."""
    found = _SENTENCE.search(now_sentence(wall))
    if found is None:
        raise ValueError(f"the prompt's date sentence changed: {now_sentence(wall)!r}; update {__name__}")
    keys = ("weekday", "day", "month", "year", "hour", "minute", "half")
    return dict(zip(keys, found.groups(), strict=True))


def _times(wall: dt.datetime) -> tuple[str, ...]:
    """The time said as a clock shows it (12 or 24 hours), "four forty", or "twenty to five"."""
    hour, minute = wall.hour % 12 or 12, wall.minute
    said = [f"{hour}:{minute:02d}", f"{wall.hour}:{minute:02d}"]
    after = wall.hour % 12 + 1
    if minute == 0:
        said.append(f"{hour} o'clock")
    elif minute < 10:
        said += [f"{hour} oh {minute}", f"{minute} past {hour}"]
    else:
        said.append(f"{hour} {minute}")
        said += [f"{minute} past {hour}"] if minute <= 30 else [f"{60 - minute} to {after}"]
    if minute in (15, 30, 45):
        said.append({15: f"quarter past {hour}", 30: f"half past {hour}", 45: f"quarter to {after}"}[minute])
    return tuple(said)


def _interleave(*groups: tuple[Item, ...]) -> tuple[Item, ...]:
    """One of each kind in turn, so the first few questions (a quick run's) cover every kind."""
    out: list[Item] = []
    for n in range(max(len(g) for g in groups)):
        out += [g[n] for g in groups if n < len(g)]
    return tuple(out)
