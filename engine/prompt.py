"""Prompt assembly, a stage of its own: it gets the turn's signal like every other stage.

One system message at the start, the same in every request of a session (but for the minute): the persona and the
local date and time from an injected wall clock. A reply the user cut off is sent as exactly the words heard, and
the note that it was cut rides on the user's next message (engine.history), so nothing before it changes after a
barge-in and the embedded model's prefix cache keeps the whole conversation: the question that interrupted a reply
is answered after reading itself and the cut reply, not the whole prompt again.

Worded for what a 135M model reads right: a marker in words inside the reply was repeated back, a dash on it was
copied with the cut story into later replies, and "Today is <date>. The time is 3:39 AM" is the wording of the time
it reads best (figures: docs/decisions/0002).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Protocol

from adapters.contract import CancelSignal, Message
from engine.history import build_history
from engine.journal import Event
from engine.prompt_languages import PROMPTS, date_sentence
from engine.prompt_languages import system_prompt as system_prompt_for

__all__ = ["DEFAULT_SYSTEM_PROMPT", "HistoryPrompt", "PromptBuilder", "local_now", "now_sentence", "system_prompt_for"]

DEFAULT_SYSTEM_PROMPT = PROMPTS["en"]


def local_now() -> dt.datetime:
    """The wall clock with the local time zone attached."""
    return dt.datetime.now().astimezone()


def now_sentence(now: dt.datetime, language: str = "en") -> str:
    """`Today is Tuesday, 3 June 2025. The time is 2:05 PM (CEST, UTC+02:00).`, or its translation (the date's
    words in the locale's language would not match the prompt's: they follow `language`, not the locale)."""
    return date_sentence(now, _zone(now), language)


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
    """A system prompt (with the date) plus the conversation rebuilt from the journal; `language` ("en", "de"...,
    or "detect") words the date, and the default prompt when none is given."""

    def __init__(
        self,
        system_prompt: str | None = None,
        *,
        wall: Callable[[], dt.datetime] = local_now,
        language: str = "en",
    ) -> None:
        self.system_prompt = system_prompt if system_prompt is not None else system_prompt_for(language)
        self.language = language
        self._wall = wall

    async def build(self, events: Sequence[Event], signal: CancelSignal, *, drop_oldest: int) -> tuple[Message, ...]:
        history = build_history(events, drop_oldest=drop_oldest)
        return (Message("system", self.system_text()), *history)

    def system_text(self) -> str:
        return f"{self.system_prompt} {now_sentence(self._wall(), self.language)}"
