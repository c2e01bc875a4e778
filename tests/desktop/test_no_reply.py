"""A turn of which nothing was heard is marked "No reply — …" under it, live and when read back from its journal,
never left as the person's words with nothing after them."""

from __future__ import annotations

from typing import Any

from pytestqt.qtbot import QtBot

from desktop.model.conversations import bubbles_of, plain_text
from desktop.model.transcript_model import Bubble, TranscriptModel
from desktop.model.wording import NO_REPLY_STOPPED, NO_REPLY_UNHEARD
from desktop.qt.transcript import TranscriptView
from engine.events import ReplyHeard, TextGenerated, ToolFinished, TurnEnded, TurnStarted


def _live(*events: Any) -> TranscriptModel:
    model = TranscriptModel()
    for event in events:
        model.handle(event)
    return model


def _reply(model: TranscriptModel, turn: int = 1) -> Bubble:
    replies = [b for b in model.bubbles if b.role == "assistant" and b.turn == turn]
    assert replies, "a reply bubble under the person's words"
    return replies[-1]


def test_a_reply_generated_but_never_heard_is_marked_when_its_turn_ends() -> None:
    model = _live(
        TurnStarted(1, "text", "Tell me a story."),
        TextGenerated(1, 1, 1, "Once upon a time."),
        ReplyHeard(1, 1, "", "Once upon a time.", True, 0.0),  # nothing played: the output was mute
        TurnEnded(1, "completed"),
    )
    assert _reply(model).note == NO_REPLY_UNHEARD


def test_a_turn_that_ended_without_any_reply_does_not_keep_saying_thinking() -> None:
    model = _live(TurnStarted(1, "text", "Hello?"), TurnEnded(1, "completed"))
    assert _reply(model).note == NO_REPLY_UNHEARD


def test_a_turn_stopped_before_anything_was_heard_says_no_reply_and_why() -> None:
    model = _live(
        TurnStarted(1, "voice", "What is two plus two?"),
        TextGenerated(1, 1, 1, "Four"),
        ReplyHeard(1, 1, "", "Four", True, 0.0),
        TurnEnded(1, "aborted"),
    )
    assert _reply(model).note == NO_REPLY_STOPPED
    quiet = _live(TurnStarted(2, "text", "Hi"), TurnEnded(2, "aborted"))
    assert _reply(quiet, 2).note == NO_REPLY_STOPPED


def test_a_tool_note_stays_and_the_mark_follows_it() -> None:
    model = _live(
        TurnStarted(1, "text", "What time is it?"),
        ToolFinished(1, 1, "c1", "OK", "12:00"),
        TurnEnded(1, "aborted"),
    )
    assert _reply(model).note == f"Tool finished: OK · {NO_REPLY_STOPPED}"


def test_a_heard_reply_gets_no_mark() -> None:
    model = _live(
        TurnStarted(1, "text", "Hi"),
        TextGenerated(1, 1, 1, "Hello."),
        ReplyHeard(1, 1, "Hello.", "Hello.", False, 500.0),
        TurnEnded(1, "completed"),
    )
    assert _reply(model).note == ""


def _journal(outcome: str) -> list[dict[str, Any]]:
    return [
        {"seq": 1, "time": 1.0, "type": "session/start", "version": "0.1.0"},
        {"seq": 2, "time": 2.0, "type": "turn/start", "turn": 1, "source": "voice"},
        {"seq": 3, "time": 2.0, "type": "user/message", "turn": 1, "text": "Tell me a story."},
        {"seq": 4, "time": 3.0, "type": "metrics/turn", "turn": 1},
        {"seq": 5, "time": 3.0, "type": "turn/end", "turn": 1, "outcome": outcome},
    ]


def test_a_past_turn_answered_where_nothing_was_heard_is_marked_when_read_back() -> None:
    bubbles = bubbles_of(_journal("completed"))
    assert [(b.role, b.note) for b in bubbles] == [("user", ""), ("assistant", NO_REPLY_UNHEARD)]
    assert plain_text(bubbles) == f"You: Tell me a story.\n\nParley: ({NO_REPLY_UNHEARD})\n"
    stopped = bubbles_of(_journal("aborted"))
    assert [b.note for b in stopped] == ["", NO_REPLY_STOPPED]


def test_the_mark_shows_as_a_line_in_the_reply_bubble(qtbot: QtBot) -> None:
    model = TranscriptModel()
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    model.load(bubbles_of(_journal("completed")))
    model.handle(TurnStarted(2, "text", "Are you there?"))
    model.handle(TurnEnded(2, "completed"))
    for reply in [b for b in model.bubbles if b.role == "assistant"]:
        widget = view.bubble_widget(reply)
        assert widget.note.isVisibleTo(widget)
        assert widget.note.text() == NO_REPLY_UNHEARD
        assert not widget.body.isVisibleTo(widget), "no empty body: just the mark"
