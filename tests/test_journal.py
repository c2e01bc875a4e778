"""SPEC §7: append-only JSON Lines that survive a crash and never hold a secret."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.history import build_history
from engine.journal import Journal, JournalCorrupt, read_events


def _write(path: Path, *events: dict[str, object], tail: str = "") -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + tail)


def test_a_torn_last_line_is_ignored_on_read_and_cut_on_open(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    _write(path, {"seq": 1, "time": 1.0, "type": "session/start"}, tail='{"seq": 2, "ti')
    assert [e["seq"] for e in read_events(path)] == [1]
    journal = Journal(path)
    assert journal.torn_line_dropped
    journal.append("session/start", version="x")
    journal.close()
    assert [e["seq"] for e in read_events(path)] == [1, 2]
    assert path.read_text().endswith("\n")


def test_a_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_text(json.dumps({"seq": 1, "time": 1.0, "type": "session/start"}))
    journal = Journal(path)
    assert not journal.torn_line_dropped
    journal.append("session/start")
    journal.close()
    assert [e["seq"] for e in read_events(path)] == [1, 2]


def test_a_damaged_middle_line_is_moved_aside_and_the_rest_kept(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    good = [{"seq": 1, "time": 1.0, "type": "session/start"}, {"seq": 3, "time": 1.0, "type": "session/start"}]
    path.write_text(json.dumps(good[0]) + "\nnot json\n" + json.dumps(good[1]) + "\n")
    assert [e["seq"] for e in read_events(path)] == [1, 3]
    with Journal(path) as journal:
        assert [(bad.number, bad.reason) for bad in journal.recovered.quarantined] == [(2, "not JSON")]
        journal.append("session/start")
    assert [e["seq"] for e in read_events(path)] == [1, 3, 4]
    assert (tmp_path / "journal.jsonl.quarantined").read_bytes() == b"not json\n"


def test_a_path_that_is_not_a_file_cannot_be_a_journal(tmp_path: Path) -> None:
    (tmp_path / "journal.jsonl").mkdir()
    with pytest.raises(JournalCorrupt, match="is not a file"):
        Journal(tmp_path / "journal.jsonl")


def test_a_turn_left_open_by_a_crash_is_closed_as_aborted_with_its_calls_balanced(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    _write(
        path,
        {"seq": 1, "time": 1.0, "type": "turn/start", "turn": 1, "source": "voice"},
        {"seq": 2, "time": 1.0, "type": "user/message", "turn": 1, "text": "note this"},
        {
            "seq": 3,
            "time": 1.0,
            "type": "tool/call",
            "turn": 1,
            "step": 1,
            "call_id": "c1",
            "name": "take_note",
            "arguments": "{}",
        },
        tail='{"seq": 4, "type": "tool/res',
    )
    journal = Journal(path)
    assert journal.recovered.turns_closed == (1,)
    journal.close()
    events = read_events(path)
    assert [e["type"] for e in events[3:]] == ["tool/result", "turn/end"]
    assert events[3]["code"] == "ABORTED"
    assert events[4]["outcome"] == "aborted"
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
    messages = build_history(events)
    assert [m.role for m in messages] == ["user", "assistant", "tool"]


def test_secrets_never_reach_the_file(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path, secrets=["sk-live-123456"])
    failure = {"code": "AUTH", "message": "bad key sk-live-123456"}
    journal.append("assistant/attempt", turn=1, step=1, attempt=1, failure=failure)
    journal.close()
    text = path.read_text()
    assert "sk-live-123456" not in text
    assert "[redacted]" in text


def test_history_rebuilt_from_the_file_equals_the_live_history(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    journal.append("turn/start", turn=1, source="text")
    journal.append("user/message", turn=1, text="What time is it?")
    journal.append("tool/call", turn=1, step=1, call_id="c1", name="current_time", arguments='{"tz": "UTC"}')
    journal.append("tool/result", turn=1, step=1, call_id="c1", code="OK", output="12:00")
    journal.append(
        "assistant/message", turn=1, step=2, text="It is noon.", interrupted=False, heard_ms=900.0, generated_chars=11
    )
    journal.append("turn/end", turn=1, outcome="completed")
    live = build_history(journal.events)
    journal.close()
    with Journal(path) as reopened:
        again = build_history(reopened.events)
    assert live == again
    assert [m.role for m in again] == ["user", "assistant", "tool", "assistant"]
    assert again[1].tool_calls[0].arguments == '{"tz": "UTC"}'
