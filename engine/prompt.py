"""Prompt assembly, a stage of its own: it gets the turn's signal like every other stage.

The system prompt ends with what the model cannot know by itself: that its last reply was cut off
(only after a barge-in; the reply itself stays exactly the words heard) and the local date and time
from an injected wall clock. Both sit in the one system message at the start, worded as measured on
SmolLM2-135M (30 tries each, the question asked right after a reply was cut): with the note, "what
day is it?" was answered right 26 times and "what's today's date?" 20 (without it 6 and 0); a system
message in mid-conversation made it apologise instead (16 of 16), and a marker inside the reply
("[the user interrupted here]") was repeated back. "Today is <date>. The time is 3:39 AM" is the
wording it reads best: "What time is it?" answered right 31 of 32 times (21 right after a cut),
against 16 for "03:39" and 8 of 24 for "It is now <date>, 03:24".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Protocol

from adapters.contract import CancelSignal, Message
from engine.history import build_history, last_reply_cut_off
from engine.journal import Event

DEFAULT_SYSTEM_PROMPT = (
    "You are Parley, a friendly voice companion. Answer in one to three short spoken sentences. "
    "No lists, no markdown, no emoji."
)
CUT_OFF_NOTE = (
    "Your last reply was cut off: the user interrupted you and heard only what is in the conversation. "
    "Answer their new message."
)
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip  # English whatever the locale: the prompt is English


def local_now() -> dt.datetime:
    """The wall clock with the local time zone attached."""
    return dt.datetime.now().astimezone()


def now_sentence(now: dt.datetime) -> str:
    """`Today is Tuesday, 3 June 2025. The time is 2:05 PM (CEST, UTC+02:00).`"""
    date = f"{_DAYS[now.weekday()]}, {now.day} {_MONTHS[now.month - 1]} {now.year}"
    time = f"{now.hour % 12 or 12}:{now:%M} {'AM' if now.hour < 12 else 'PM'}"
    return f"Today is {date}. The time is {time} ({_zone(now)})."


def _zone(now: dt.datetime) -> str:
    offset = now.utcoffset()
    if offset is None:
        return "local time, time zone unknown"
    minutes = round(offset.total_seconds() / 60)
    sign, minutes = ("+" if minutes >= 0 else "-"), abs(minutes)
    utc = f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    name = now.tzname() or ""
    if not name or name.startswith(("UTC", "GMT", "+", "-")):  # "UTC", "+03": the offset says it all
        return "UTC" if minutes == 0 and name in ("UTC", "GMT") else utc
    return f"{name}, {utc}"


class PromptBuilder(Protocol):
    async def build(
        self, events: Sequence[Event], signal: CancelSignal, *, drop_oldest: int
    ) -> tuple[Message, ...]: ...


class HistoryPrompt:
    """A system prompt (with the cut-off note and the date) plus the conversation rebuilt from the journal."""

    def __init__(
        self, system_prompt: str = DEFAULT_SYSTEM_PROMPT, *, wall: Callable[[], dt.datetime] = local_now
    ) -> None:
        self.system_prompt = system_prompt
        self._wall = wall

    async def build(self, events: Sequence[Event], signal: CancelSignal, *, drop_oldest: int) -> tuple[Message, ...]:
        history = build_history(events, drop_oldest=drop_oldest)
        return (Message("system", self.system_text(events, drop_oldest=drop_oldest)), *history)

    def system_text(self, events: Sequence[Event], *, drop_oldest: int = 0) -> str:
        parts = [self.system_prompt]
        if last_reply_cut_off(events, drop_oldest=drop_oldest):
            parts.append(CUT_OFF_NOTE)
        parts.append(now_sentence(self._wall()))
        return " ".join(parts)
