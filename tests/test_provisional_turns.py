"""A turn a pause ended is provisional: taken back before any of its reply is heard, it leaves no trace in the
conversation; once heard (or once a tool runs, or a retry is shown) it is on the record like any other."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.contract import CancelSignal, ToolSpec
from engine.conversation import GOING_ON_S, TOLD_LATE_S
from engine.events import TurnWithdrawn
from engine.history import build_history
from engine.inbox import UserInput
from engine.invariants import violations
from engine.journal import Journal, read_events
from engine.testing import Delay, Hang, failure, reply, tool_reply
from engine.tools import Tool, ToolRegistry
from tests.engine_kit import kit

pytestmark = pytest.mark.anyio
HALF, WHOLE = "Tell me about Rome.", "Tell me about Rome and its history."


def test_a_held_turn_reaches_the_disk_only_when_committed(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with Journal(path) as journal:
        journal.append("session/start", version="x")
        journal.hold(1)
        journal.append("turn/start", turn=1, source="voice")
        journal.append("barge_in/onset_paused", onset=1.0)  # not the turn's: written at once
        assert [e["type"] for e in read_events(path)] == ["session/start", "barge_in/onset_paused"]
        assert [e["type"] for e in journal.events][-2:] == ["turn/start", "barge_in/onset_paused"], "readable"
        journal.commit()
        assert [(e["seq"], e["type"]) for e in read_events(path)] == [
            (1, "session/start"),
            (2, "barge_in/onset_paused"),
            (3, "turn/start"),
        ]
        assert journal.events[-2]["seq"] == 3


def test_a_withdrawn_turn_never_reaches_the_disk(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with Journal(path) as journal:
        journal.hold(1)
        journal.append("turn/start", turn=1, source="voice")
        journal.append("user/message", turn=1, text=HALF)
        dropped = journal.withdraw()
        assert [e["type"] for e in dropped] == ["turn/start", "user/message"]
        assert journal.events == []
        journal.append("turn/start", turn=1, source="voice")
    assert [(e["seq"], e["type"]) for e in read_events(path)] == [(1, "turn/start")]


async def test_going_on_before_the_reply_is_heard_leaves_one_turn(tmp_path: Path) -> None:
    slow = [Delay(5.0), *reply("Rome was founded long ago.")]
    async with kit(tmp_path, [slow, reply("Rome grew from a village into an empire.")]) as k:
        half = UserInput(HALF, "voice", provisional=True)
        k.conversation.submit(half)
        await k.until(lambda: bool(k.llm.calls), "the request")
        assert k.conversation.withdraw(half)
        assert not k.conversation.withdraw(half), "once"
        k.conversation.submit(UserInput(WHOLE, "voice", provisional=True))
        await k.until_turn_ended(2)
        events = read_events(k.journal.path)
    assert [e["text"] for e in events if e["type"] == "user/message"] == [WHOLE]
    assert [(e["turn"], e["outcome"]) for e in events if e["type"] == "turn/end"] == [(2, "completed")]
    assert [e["requests"] for e in events if e["type"] == "llm/withdrawn"] == [1], "the request sent is on record"
    assert [m.content for m in build_history(events) if m.role == "user"] == [WHOLE]
    assert violations(events) == []
    assert [e.turn for e in k.events if isinstance(e, TurnWithdrawn)] == [1]


async def test_a_queued_input_is_simply_taken_out(tmp_path: Path) -> None:
    async with kit(tmp_path, [[Hang()]]) as k:
        k.submit("first")
        await k.until(lambda: bool(k.llm.calls), "the first turn")
        queued = UserInput(HALF, "voice", provisional=True)
        k.conversation.submit(queued)
        assert k.conversation.withdrawable(queued)
        assert k.conversation.withdraw(queued)
        assert len(k.conversation.inbox) == 0


async def test_a_reply_once_heard_cannot_be_taken_back(tmp_path: Path) -> None:
    story = reply("Once upon a time there was a dragon. " * 5)
    async with kit(tmp_path, [story]) as k:
        half = UserInput(HALF, "voice", provisional=True)
        k.conversation.submit(half)
        await k.until(lambda: any(s.played_ms > 0 for s in k.speech.report(1)), "the reply heard")
        await k.until(lambda: bool(k.of_type("turn/start", 1)), "the turn committed")
        assert not k.conversation.withdrawable(half)
        assert not k.conversation.withdraw(half)
        await k.until_turn_ended(1)
    assert [e["outcome"] for e in k.of_type("turn/end")] == ["completed"]


@pytest.mark.parametrize("heard_ms", [1e-3, 1000.0])
async def test_going_on_over_a_reply_just_begun_still_takes_the_turn_back(tmp_path: Path, heard_ms: float) -> None:
    """A breath pause the reply began in: the person goes on within GOING_ON_S, having heard a word or two of
    it over their own, or a second of a fast reply (real speech on PulseAudio, "And so my fellow Americans,
    [1.15 s] ask not ..."). One turn with the whole sentence; the false start is not an answer they were given."""
    story = reply("Once upon a time there was a dragon. " * 5)
    async with kit(tmp_path, [story, reply("Rome grew.")]) as k:
        half = UserInput(HALF, "voice", provisional=True, ended_at=k.clock.now())
        k.conversation.submit(half)
        await k.until(lambda: sum(s.played_ms for s in k.speech.report(1)) >= heard_ms, "the reply heard")
        assert k.clock.now() < half.ended_at + GOING_ON_S  # type: ignore[operator]
        assert k.conversation.withdraw(half), "still going on"
        k.conversation.submit(UserInput(WHOLE, "voice", provisional=True, ended_at=k.clock.now()))
        await k.until_turn_ended(2)
        events = read_events(k.journal.path)
    assert [e["text"] for e in events if e["type"] == "user/message"] == [WHOLE]
    assert [m.role for m in build_history(events)] == ["user", "assistant"]
    assert violations(events) == []
    assert not [e for e in events if e["type"] == "turn/end" and e["outcome"] != "completed"]


async def test_going_on_is_judged_by_when_the_person_began_not_when_the_ears_told_of_it(tmp_path: Path) -> None:
    """The ears tell of speech after its first windows: a breath of 1.45 s is told of past the going-on time, and is
    still going on (issue 36: breaths of up to ~1.5 s keep the turn). Words begun after it interrupt."""
    story = reply("Once upon a time there was a dragon. " * 5)
    async with kit(tmp_path, [story, reply("Rome grew.")]) as k:
        half = UserInput(HALF, "voice", provisional=True, ended_at=k.clock.now() - GOING_ON_S)
        k.conversation.submit(half)
        await k.until(lambda: sum(s.played_ms for s in k.speech.report(1)) > 0, "the reply heard")
        ended = half.ended_at
        assert ended is not None
        assert ended + GOING_ON_S <= k.clock.now() < ended + GOING_ON_S + TOLD_LATE_S
        assert k.conversation.withdrawable(half), "words begun by now may not have been told of yet"
        assert not k.conversation.withdraw(half, ended + GOING_ON_S + 0.01), "begun after the going-on time"
        assert not k.conversation.withdraw(half, k.clock.now() - TOLD_LATE_S - 0.01), "told of too late to tell"
        assert k.conversation.withdraw(half, ended + GOING_ON_S - 0.05), "begun within it, told of late"
        k.conversation.submit(UserInput(WHOLE, "voice", provisional=True, ended_at=k.clock.now()))
        await k.until_turn_ended(2)
        events = read_events(k.journal.path)
    assert [e["text"] for e in events if e["type"] == "user/message"] == [WHOLE]
    assert violations(events) == []


async def test_a_reply_heard_as_an_answer_cannot_be_taken_back(tmp_path: Path) -> None:
    """Once the going-on time has passed, a reply being heard is an answer: speaking now interrupts it."""
    story = reply("Once upon a time there was a dragon. " * 5)
    async with kit(tmp_path, [story]) as k:
        half = UserInput(HALF, "voice", provisional=True, ended_at=k.clock.now() - GOING_ON_S)
        k.conversation.submit(half)
        await k.until(lambda: sum(s.played_ms for s in k.speech.report(1)) > 0, "the reply heard")
        await k.until(lambda: bool(k.of_type("turn/start", 1)), "the turn committed")
        assert not k.conversation.withdraw(half)
        await k.until_turn_ended(1)
    assert [e["outcome"] for e in k.of_type("turn/end")] == ["completed"]


async def test_a_tool_call_commits_the_turn_before_it_runs(tmp_path: Path) -> None:
    ran: list[str] = []

    async def note(arguments: str, signal: CancelSignal) -> str:
        ran.append(arguments)
        return "noted"

    tools = ToolRegistry([Tool(ToolSpec("note", "take a note"), note)])
    scripts = [tool_reply("note", ['{"text": "milk"}']), [Delay(5.0), *reply("Noted.")]]
    async with kit(tmp_path, scripts, tools=tools) as k:
        item = UserInput("Note milk.", "voice", provisional=True)
        k.conversation.submit(item)
        await k.until(lambda: bool(ran), "the tool")
        assert [e["type"] for e in k.of_type("tool/call")] == ["tool/call"], "on disk before it ran"
        assert not k.conversation.withdraw(item), "it acted on the world: no longer provisional"
        await k.until_turn_ended(1)


async def test_a_retry_shown_to_the_user_commits_the_turn(tmp_path: Path) -> None:
    async with kit(tmp_path, [failure("RATE_LIMITED"), [Hang()]]) as k:
        item = UserInput(HALF, "voice", provisional=True)
        k.conversation.submit(item)
        await k.until(lambda: bool(k.of_type("llm/retry")), "the retry")
        assert [e["type"] for e in k.of_type("turn/start")] == ["turn/start"]
        assert not k.conversation.withdraw(item)
