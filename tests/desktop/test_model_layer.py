"""The model layer without Qt: plain words, the transcript and trace models, and the import rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from adapters.contract import LlmFailure
from desktop.model.facts import TurnStopped
from desktop.model.trace_model import TraceBook
from desktop.model.transcript_model import TranscriptModel, unheard_rest
from desktop.model.wording import countdown, failure_reason, state_label
from engine.events import (
    AttemptFailed,
    BackoffInfo,
    ReplyHeard,
    State,
    TextGenerated,
    TurnEnded,
    TurnStarted,
    TurnWithdrawn,
)

ROOT = Path(__file__).resolve().parents[2]
QT_FREE = [
    "desktop.qt",
    "desktop.model.session",
    "desktop.model.voice",
    "desktop.model.wording",
    "desktop.model.transcript_model",
    "desktop.model.trace_model",
    "desktop.model.settings_io",
    "desktop.model.keyring_store",
    "desktop.model.device_lists",
]


def test_the_model_modules_import_no_qt() -> None:
    code = (
        f"import sys, {', '.join(QT_FREE)}; print([m for m in sys.modules if m.split('.')[0] in ('PySide6', 'qasync')])"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("resume_in", "text"),
    [
        (2.0, "Retrying in 2.0 s (rate limited)"),
        (1.99999, "Retrying in 2.0 s (rate limited)"),
        (1.31, "Retrying in 1.4 s (rate limited)"),
        (-0.5, "Retrying in 0.0 s (rate limited)"),
    ],
)
def test_the_countdown_rounds_up_to_a_tenth(resume_in: float, text: str) -> None:
    assert countdown(BackoffInfo(2000, "RATE_LIMITED", 100.0 + resume_in, 1), now=100.0) == text


def test_states_and_failures_in_plain_words() -> None:
    assert state_label(State.STOPPING, None, 0.0) == "Stopping…"
    assert failure_reason(LlmFailure("x", "AUTH", 401)) == "The API key was refused"
    waited = LlmFailure("x", "RATE_LIMITED", 429, provider_retry_after_ms=60_000)
    assert failure_reason(waited) == "The provider asked us to wait 60 s; try again after that"
    assert failure_reason(LlmFailure("x", "SOMETHING_NEW")) == "The request failed (something new)"


def test_unheard_rest_is_what_follows_the_heard_words() -> None:
    assert unheard_rest(" Once upon a time there", "Once upon") == "a time there"
    assert unheard_rest("Hello  there\nfriend", "Hello there") == "friend"
    assert unheard_rest("All of it.", "All of it.") == ""


def test_a_reply_streams_then_settles_and_a_failed_attempt_is_discarded() -> None:
    model = TranscriptModel()
    changes: list[str] = []
    model.on_change(lambda bubble, new: changes.append(f"{bubble.role}{'+' if new else ''}"))
    model.handle(TurnStarted(1, "text", "Hi"))
    model.handle(TextGenerated(1, 1, 1, "Hel"))
    model.handle(AttemptFailed(1, 1, 1, LlmFailure("x", "SERVER_ERROR", 500)))
    bubble = model.assistant(1)
    assert bubble is not None
    assert (bubble.text, bubble.note) == ("", "Attempt 1 failed (server error)")
    model.handle(TextGenerated(1, 1, 2, "Hello "))
    model.handle(TextGenerated(1, 1, 2, "there, friend."))
    assert bubble.text == "Hello there, friend."
    assert bubble.heard is None  # still streaming: all in ink
    model.handle(ReplyHeard(1, 1, "Hello there,", "Hello there, friend.", True, 600.0))
    model.handle(TurnEnded(1, "aborted"))
    assert (bubble.heard, bubble.unheard, bubble.interrupted, bubble.settled) == ("Hello there,", "friend.", True, True)
    assert changes[:2] == ["user+", "assistant+"]


def test_a_withdrawn_turn_leaves_the_transcript() -> None:
    """The person went on before hearing a reply: their half sentence and its "Thinking…" go; the whole one comes."""
    model = TranscriptModel()
    changed: list[tuple[str, bool]] = []
    model.on_change(lambda bubble, new: changed.append((bubble.role, bubble.withdrawn)))
    model.handle(TurnStarted(1, "voice", "Tell me about Rome."))
    model.handle(TurnWithdrawn(1))
    model.handle(TurnStarted(2, "voice", "Tell me about Rome and its history."))
    assert [(b.role, b.text) for b in model.bubbles] == [
        ("user", "Tell me about Rome and its history."),
        ("assistant", ""),
    ]
    assert ("user", True) in changed, "the views were told to hide the half sentence"
    assert ("assistant", True) in changed, "and its Thinking…"


def test_the_trace_keeps_attempts_retries_and_timings_with_causes_in_plain_words() -> None:
    book = TraceBook()
    book.handle(TurnStarted(3, "voice", "Hi"))
    book.handle(AttemptFailed(3, 1, 1, LlmFailure("x", "RATE_LIMITED", 429, provider_retry_after_ms=2000)))
    book.handle(TurnStopped(3, "voice"))
    book.handle(TurnEnded(3, "aborted", None, {"quiesce_ms": 3.5, "llm_ttft_ms": 120.0}))
    trace = book.turns[3]
    assert trace.title() == "Turn 3 (spoken): interrupted by voice"
    assert [line for line, _ in trace.lines()] == [
        "attempt 1 failed: RATE_LIMITED · HTTP 429",
        "quiesce_ms  3.5 ms  (until all its work had stopped)",
        "llm_ttft_ms  120 ms  (for the model's first word)",
    ]
    book.handle(TurnStarted(4, "text", "Go on"))
    book.handle(TurnStopped(4, "you"))
    book.handle(TurnEnded(4, "aborted"))
    book.handle(TurnStarted(5, "text", "Again"))
    book.handle(TurnEnded(5, "failed", LlmFailure("no", "AUTH", 401)))
    assert book.turns[4].title() == "Turn 4 (typed): stopped by you"
    assert book.turns[5].title() == "Turn 5 (typed): failed"
    assert book.turns[5].lines()[0][0] == "failed: API key refused (AUTH)"
