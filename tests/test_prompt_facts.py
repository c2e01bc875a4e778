"""What the model is told besides the history: where a reply was cut off, and the date and time."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from adapters.contract import CancelSignal, User
from adapters.llm.openai_compat import OpenAICompatAdapter
from adapters.llm.secret import Secret
from engine.history import CUT_NOTE
from engine.prompt import DEFAULT_SYSTEM_PROMPT, HistoryPrompt, now_sentence
from tests.engine_kit import kit
from tests.fault_behaviours import stall_mid_stream, text_stream, words
from tests.fault_server import FaultServer

pytestmark = pytest.mark.anyio
CEST = dt.timezone(dt.timedelta(hours=2), "CEST")
WALL = dt.datetime(2025, 6, 3, 14, 5, 59, tzinfo=CEST)
NOW = "Today is Tuesday, 3 June 2025. The time is 2:05 PM (CEST, UTC+02:00)."
STORY = "Once upon a time, in the land of dragons, there lived a baker."


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (WALL, NOW),
        (
            dt.datetime(2026, 1, 1, 0, 0, tzinfo=dt.UTC),
            "Today is Thursday, 1 January 2026. The time is 12:00 AM (UTC).",
        ),
        (
            dt.datetime(2026, 2, 28, 9, 30, tzinfo=dt.timezone(-dt.timedelta(hours=3, minutes=30), "NST")),
            "Today is Saturday, 28 February 2026. The time is 9:30 AM (NST, UTC-03:30).",
        ),
        (
            dt.datetime(2026, 7, 4, 23, 59, tzinfo=dt.timezone(dt.timedelta(hours=3), "+03")),
            "Today is Saturday, 4 July 2026. The time is 11:59 PM (UTC+03:00).",
        ),
    ],
)
def test_the_date_and_time_are_said_with_weekday_and_time_zone(when: dt.datetime, expected: str) -> None:
    assert now_sentence(when) == expected


def _events(*turns: tuple[str, str | None, bool]) -> list[dict[str, Any]]:
    """Journal events for turns of (user text, heard reply or None, interrupted)."""
    events: list[dict[str, Any]] = []
    for number, (user, heard, interrupted) in enumerate(turns, start=1):
        events += [
            {"type": "turn/start", "turn": number, "source": "voice"},
            {"type": "user/message", "turn": number, "text": user},
        ]
        if heard is not None:
            events.append(
                {"type": "assistant/message", "turn": number, "step": 1, "text": heard, "interrupted": interrupted}
            )
    return events


async def _prompt(events: list[dict[str, Any]], drop_oldest: int = 0) -> list[tuple[str, str]]:
    messages = await HistoryPrompt(wall=lambda: WALL).build(events, CancelSignal(), drop_oldest=drop_oldest)
    return [(m.role, m.content) for m in messages]


async def test_the_message_after_a_cut_reply_carries_the_note_and_nothing_before_it_changes() -> None:
    """The cut reply is its heard words alone and the person's next message says it was cut, in every later
    request too: a barge-in changes nothing before it (the embedded model's prefix cache keeps the conversation),
    and the system message never changes."""
    system = ("system", f"{DEFAULT_SYSTEM_PROMPT} {NOW}")
    stop = ("user", f"Stop.\n{CUT_NOTE}")
    assert await _prompt(_events(("Hi", None, False))) == [system, ("user", "Hi")]
    cut = _events(("Story?", "Once upon", True), ("Stop.", None, False))
    assert await _prompt(cut) == [system, ("user", "Story?"), ("assistant", "Once upon"), stop]
    later = _events(("Story?", "Once upon", True), ("Stop.", "Fine.", False), ("Hm?", None, False))
    assert await _prompt(later) == [*await _prompt(cut), ("assistant", "Fine."), ("user", "Hm?")]  # the note stays
    whole = _events(("Story?", "Once upon", False), ("Stop.", None, False))
    assert await _prompt(whole) == [system, ("user", "Story?"), ("assistant", "Once upon"), ("user", "Stop.")]
    # the interrupted turn trimmed away (context overflow): its mark goes with it
    assert await _prompt(cut, drop_oldest=1) == [system, ("user", "Stop.")]


async def test_after_a_barge_in_the_request_holds_the_heard_words_the_note_and_the_date(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    fault_server.push(stall_mid_stream(STORY), text_stream("It is five past two."))
    adapter = OpenAICompatAdapter(fault_server.base_url, "test-model", Secret("sk-test-SECRET"), idle_timeout=5.0)
    async with kit(tmp_path, adapter=adapter, prompt=HistoryPrompt(wall=lambda: WALL), autojump=False) as k:
        k.submit("Tell me a story.")
        assert await fault_server.until(lambda: len(k.speech.report(1)) == len(words(STORY)))
        await k.clock.advance(1.0)  # 300 ms a word: "Once upon a", and a third of "time,"
        await k.conversation.cancel(User(), keep_inbox=True)
        k.submit("Stop. What time is it?")
        async with k.clock.autojump():
            await k.until_turn_ended(2)
        (heard,) = k.of_type("assistant/message", 1)
    assert (heard["text"], heard["interrupted"]) == ("Once upon a", True)  # the journal: the heard words only
    first, second = (request.json["messages"] for request in fault_server.requests)
    assert first == [
        {"role": "system", "content": f"{DEFAULT_SYSTEM_PROMPT} {NOW}"},
        {"role": "user", "content": "Tell me a story."},
    ]
    assert second == [
        *first,  # what the model read before the barge-in is read again unchanged: its prefix cache holds it
        {"role": "assistant", "content": "Once upon a"},
        {"role": "user", "content": f"Stop. What time is it?\n{CUT_NOTE}"},
    ]
    assert "dragons" not in fault_server.requests[1].body.decode()  # the unheard rest is never sent
