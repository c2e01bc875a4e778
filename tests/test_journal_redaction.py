"""Issue 38 item 1: redacting the API key never changes the journal's structure, and a placeholder key (`x`, `1`,
`ollama`: what local servers take) is not a secret: the person's words stay as they said them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.history import build_history
from engine.invariants import violations
from engine.journal import Journal, read_events
from engine.redact import REDACTED, Redactor
from engine.testing import reply
from tests.engine_kit import kit

pytestmark = pytest.mark.anyio
REAL_KEY = "sk-proj-Zq81RealLookingKey0042"


@pytest.mark.parametrize("key", ["x", "1", "ollama", "text", "lm-studio", "seq"])
async def test_a_placeholder_key_leaves_every_event_and_word_whole(tmp_path: Path, key: str) -> None:
    said = f"I run {key} at home; the text says 1 x ollama"
    async with kit(tmp_path, [reply("One, 1."), reply(f"You said {key}.")], secrets=(key,)) as k:
        k.submit(said)
        k.submit("again")
        await k.until_turn_ended(2)
    path = tmp_path / "journal.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert all(isinstance(json.loads(line), dict) for line in lines)
    events = read_events(path)
    assert len(events) == len(lines), "every line is an event"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["outcome"] for e in events if e["type"] == "turn/end"] == ["completed", "completed"]
    assert [e["text"] for e in events if e["type"] == "user/message"] == [said, "again"]
    assert [e["text"] for e in events if e["type"] == "assistant/message"] == ["One, 1.", f"You said {key}."]
    assert REDACTED not in path.read_text(encoding="utf-8")
    assert violations(events) == []
    with Journal(path, secrets=(key,)) as reopened:  # the next run takes it as it is
        assert reopened.recovered.quarantined == ()
        assert reopened.recovered.turns_closed == ()
        assert [m.content for m in build_history(reopened.events) if m.role == "user"] == [said, "again"]


def test_a_real_key_is_redacted_inside_string_values_only(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with Journal(path, secrets=[REAL_KEY]) as journal:
        journal.append("turn/start", turn=1, source="text")
        journal.append("user/message", turn=1, text=f"my key is {REAL_KEY}!")
        failure = {"code": "AUTH", "message": f"key {REAL_KEY} refused", "status": 401}
        journal.append("assistant/attempt", turn=1, step=1, attempt=1, failure=failure)
        journal.append("turn/end", turn=1, outcome="failed", failure=failure)
    text = path.read_text(encoding="utf-8")
    assert REAL_KEY not in text
    events = read_events(path)
    assert len(events) == 4
    assert events[1]["text"] == f"my key is {REDACTED}!"
    assert events[2]["failure"] == {"code": "AUTH", "message": f"key {REDACTED} refused", "status": 401}


def test_the_redactor_keeps_shapes_and_ignores_short_placeholders() -> None:
    event = {"seq": 1, "text": "x1 ollama", "nested": [{"k": f"a{REAL_KEY}b"}, 1.5, True, None]}
    assert Redactor(["x", "1", "ollama", ""]).value(event) == event
    assert Redactor([REAL_KEY]).value(event) == {**event, "nested": [{"k": f"a{REDACTED}b"}, 1.5, True, None]}
