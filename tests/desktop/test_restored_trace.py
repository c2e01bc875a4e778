"""A conversation read back from its journal (at start, or continued from the past conversations) fills the trace
with its turns' outcomes, attempts, retries and figures, as they were shown live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.session import Session
from desktop.model.trace_model import TraceBook
from desktop.model.voice import SimulatedVoice
from engine.testing import FakeLlm
from tests.desktop.helpers import running_window, until

FAILURE = {"code": "RATE_LIMITED", "message": "slow down", "status": 429, "retry_after_ms": None, "request_id": None}
JOURNAL: list[dict[str, Any]] = [
    {"type": "session/start", "version": "0.1.0"},
    {"type": "turn/start", "turn": 1, "source": "voice"},
    {"type": "user/message", "turn": 1, "text": "Tell me a long story about a dragon who learns to fly."},
    {"type": "llm/request", "turn": 1, "step": 1, "attempt": 1, "provider": "local", "model": "m", "trimmed_turns": 0},
    {"type": "barge_in/detected", "source": "vad", "onset": 1.0, "at": 1.1, "turn": 1},
    {"type": "barge_in/confirmed", "source": "vad", "onset": 1.0, "turn": 1},
    {
        "type": "assistant/message",
        "turn": 1,
        "step": 1,
        "text": "Once upon a time, in the land of",
        "interrupted": True,
        "heard_ms": 2045.3,
        "generated_chars": 229,
    },
    {"type": "metrics/turn", "turn": 1, "eot_ms": 422.7, "llm_ttft_ms": 4.7, "ttfa_ms": 906.6, "stop_ms": 31.2},
    {"type": "turn/end", "turn": 1, "outcome": "aborted"},
    {"type": "turn/start", "turn": 2, "source": "text"},
    {"type": "user/message", "turn": 2, "text": "What time is it?"},
    {"type": "assistant/attempt", "turn": 2, "step": 1, "attempt": 1, "failure": FAILURE},
    {"type": "llm/retry", "turn": 2, "step": 1, "retry": 1, "delay_ms": 800, "failure": FAILURE},
    {"type": "tool/call", "turn": 2, "step": 1, "call_id": "c1", "name": "clock", "arguments": "{}"},
    {"type": "tool/result", "turn": 2, "step": 1, "call_id": "c1", "code": "OK", "output": "12:00"},
    {
        "type": "assistant/message",
        "turn": 2,
        "step": 2,
        "text": "It is noon.",
        "interrupted": False,
        "heard_ms": 900.0,
        "generated_chars": 11,
        "finish": "stop",
    },
    {"type": "metrics/turn", "turn": 2, "llm_ttft_ms": 120.0, "ttfa_ms": 640.0, "prefilled": 0.0},
    {"type": "turn/end", "turn": 2, "outcome": "completed"},
    {"type": "turn/start", "turn": 3, "source": "text"},
    {"type": "user/message", "turn": 3, "text": "Are you there?"},
    {"type": "metrics/turn", "turn": 3},
    {"type": "turn/end", "turn": 3, "outcome": "failed", "failure": {**FAILURE, "code": "AUTH", "status": 401}},
    {"type": "turn/start", "turn": 4, "source": "voice"},
    {"type": "user/message", "turn": 4, "text": "Hello?"},
    {"type": "turn/end", "turn": 4, "outcome": "aborted", "recovered": True},
]


def _numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"seq": n, "time": 1000.0 + n, **event} for n, event in enumerate(events, 1)]


def test_the_trace_of_a_journal_is_the_one_shown_live() -> None:
    book = TraceBook()
    book.load(_numbered(JOURNAL))
    assert [trace.title() for trace in book.turns.values()] == [
        "Turn 1 (spoken): interrupted by voice",
        "Turn 2 (typed): answered",
        "Turn 3 (typed): failed",
        "Turn 4 (spoken): stopped: Parley was closed",
    ]
    first, second, third, _ = (book.turns[n] for n in (1, 2, 3, 4))
    shown = [line for line, _ in first.lines()]
    assert shown[:3] == [
        "stop_ms  31.2 ms  (until Parley fell silent)",
        "ttfa_ms  906.6 ms  (from your last word to its first)",
        "llm_ttft_ms  4.7 ms  (for the model's first word)",
    ]
    assert any(line.startswith("eot_ms") for line in shown)
    assert first.metrics == {"eot_ms": 422.7, "llm_ttft_ms": 4.7, "ttfa_ms": 906.6, "stop_ms": 31.2}
    assert [line for line, _ in second.lines()][:3] == [
        "attempt 1 failed: RATE_LIMITED · HTTP 429",
        "retry 1 after 800 ms",
        "tool c1: OK",
    ]
    assert "ttfa_ms  640 ms  (from your last word to its first)" in [line for line, _ in second.lines()]
    assert third.lines()[0] == ("failed: API key refused (AUTH)", "slow down")


def _journal_at(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions" / "2026-01-01_10-00-00"
    folder.mkdir(parents=True)
    journal = folder / "journal.jsonl"
    journal.write_text("".join(json.dumps(e) + "\n" for e in _numbered(JOURNAL)), encoding="utf-8")
    return journal


def test_after_a_relaunch_the_trace_shows_the_restored_turns(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    journal = _journal_at(tmp_path)
    clock = SystemClock()
    session = Session(
        Config(),
        journal_dir=tmp_path / "sessions",
        voice=SimulatedVoice(clock, ms_per_word=10),
        llm=FakeLlm(),
        clock=clock,
        resume=True,
    )
    assert session.journal_path == journal

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            tree = window.trace_panel.tree
            await until(lambda: tree.topLevelItemCount() == 4, what="the restored turns in the trace")
            first = tree.topLevelItem(0)
            assert first is not None
            assert first.text(0) == "Turn 1 (spoken): interrupted by voice"
            lines = [child.text(0) for n in range(first.childCount()) if (child := first.child(n)) is not None]
            assert "ttfa_ms  906.6 ms  (from your last word to its first)" in lines

    run(scenario())
