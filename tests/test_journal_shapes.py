"""Issue 38 item 7: a journal line of valid JSON but the wrong shape is quarantined with a message naming the file
and the line; the rest of the conversation stays usable (history, report, past conversations, new turns)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from desktop.model.conversations import bubbles_of, describe, list_conversations
from engine.history import build_history
from engine.invariants import violations
from engine.journal import Journal, quarantine_note, read_events
from engine.report import render, turn_reports
from engine.testing import reply
from tests.engine_kit import kit

pytestmark = pytest.mark.anyio


def _turn(turn: int, seq: int, said: str, answer: str) -> list[dict[str, Any]]:
    # fmt: off
    return [
        {"seq": seq, "time": 1.0, "type": "turn/start", "turn": turn, "source": "text"},
        {"seq": seq + 1, "time": 1.0, "type": "user/message", "turn": turn, "text": said},
        {"seq": seq + 2, "time": 1.0, "type": "assistant/message", "turn": turn, "step": 1, "text": answer,
         "interrupted": False, "heard_ms": 100.0, "generated_chars": len(answer)},
        {"seq": seq + 3, "time": 1.0, "type": "turn/end", "turn": turn, "outcome": "completed"},
    ]
    # fmt: on


BAD_LINES = {
    "not an object": ("[1, 2, 3]", "a JSON array, not an object"),
    "seq as a string": ('{"seq": "5", "time": 1.0, "type": "session/start"}', "seq is '5'"),
    "seq 1e400": ('{"seq": 1e400, "time": 1.0, "type": "session/start"}', "seq is inf"),
    "time as text": ('{"seq": 5, "time": "noon", "type": "session/start"}', "time is 'noon'"),
    "no turn": ('{"seq": 5, "time": 1.0, "type": "turn/start", "source": "text"}', "turn/start turn is missing"),
    "no call_id": (
        '{"seq": 5, "time": 1.0, "type": "tool/result", "turn": 1, "step": 1, "code": "OK", "output": ""}',
        "tool/result call_id is missing",
    ),
    "no text": ('{"seq": 5, "time": 1.0, "type": "user/message", "turn": 2}', "user/message text is missing"),
    "turn as a string": ('{"seq": 5, "time": 1.0, "type": "metrics/turn", "turn": "1"}', "metrics/turn turn is '1'"),
    "seq going back": ('{"seq": 2, "time": 1.0, "type": "session/start"}', "seq 2 does not follow 4"),
}


@pytest.fixture(params=sorted(BAD_LINES))
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str, str]:
    line, reason = BAD_LINES[request.param]
    path = tmp_path / "conversation" / "journal.jsonl"
    path.parent.mkdir()
    good = [json.dumps(e) for e in [*_turn(1, 1, "hello", "Hi there."), *_turn(2, 6, "how are you", "Fine.")]]
    path.write_text("\n".join([*good[:4], line, *good[4:]]) + "\n")
    return path, line, reason


def test_readers_skip_the_misfit_line_and_keep_the_rest(damaged: tuple[Path, str, str]) -> None:
    path, _, _ = damaged
    events = read_events(path)
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 6, 7, 8, 9]
    assert violations(events) == []
    assert [m.content for m in build_history(events)] == ["hello", "Hi there.", "how are you", "Fine."]
    assert "turn 2 [text] -> completed" in render(turn_reports(events))
    info = describe(path)
    assert (info.title, info.turns, info.readable) == ("hello", 2, True)
    assert [c.path for c in list_conversations(path.parent.parent)] == [path]
    assert [b.text or b.heard for b in bubbles_of(events)] == ["hello", "Hi there.", "how are you", "Fine."]


async def test_opening_it_quarantines_the_line_names_it_and_the_conversation_goes_on(
    damaged: tuple[Path, str, str],
) -> None:
    path, line, reason = damaged
    with Journal(path) as journal:
        (bad,) = journal.recovered.quarantined
        assert (bad.number, bad.raw.decode()) == (5, line)
        assert reason in bad.reason
        note = quarantine_note(path, journal.recovered.quarantined)
        assert note.startswith(f"{path}: line 5 ({bad.reason})")
        assert f"moved to {path}.quarantined" in note
    assert path.with_name("journal.jsonl.quarantined").read_text() == line + "\n"
    assert line not in path.read_text()
    async with kit(path.parent, [reply("Still here.")]) as k:
        k.submit("are you there")
        await k.until_turn_ended(3)
        assert k.of_type("turn/end", 3)[0]["outcome"] == "completed"
        assert [m.content for m in k.llm.calls[0].messages[1:]] == [
            "hello", "Hi there.", "how are you", "Fine.", "are you there"
        ]  # fmt: skip
    events = read_events(path)
    assert violations(events) == []
    with Journal(path) as again:
        assert again.recovered.quarantined == ()
