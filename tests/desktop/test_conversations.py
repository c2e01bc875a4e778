"""The conversation survives a restart; New conversation, past conversations (read, continue); the menu."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.conversations import bubbles_of, last_conversation, list_conversations
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from desktop.qt.conversations_dialog import ConversationsDialog
from desktop.qt.text_dialog import TextDialog
from desktop.qt.window import MainWindow
from engine.events import State
from engine.journal import read_events
from engine.testing import FakeLlm, reply
from tests.desktop.helpers import running_window, until


def _session(tmp_path: Path, llm: FakeLlm) -> Session:
    clock = SystemClock()
    voice = SimulatedVoice(clock, ms_per_word=10)
    return Session(Config(), journal_dir=tmp_path / "sessions", voice=voice, llm=llm, clock=clock, resume=True)


async def _ask(window: MainWindow, text: str) -> None:
    turns = len(window.trace.turns)
    assert window.session.send_text(text)
    await until(lambda: len(window.trace.turns) > turns and window.chip.state is State.IDLE, what=f"answered {text}")
    await until(lambda: all(t.outcome != "running" for t in window.trace.turns.values()), what="turn closed")


def _texts(window: MainWindow) -> list[str]:
    return [b.text if b.role == "user" else (b.heard or "") for b in window.transcript_model.bubbles]


def test_a_restart_opens_on_the_last_conversation_and_the_model_remembers_it(
    run: Any, qtbot: QtBot, tmp_path: Path
) -> None:
    first = _session(tmp_path, FakeLlm([reply("Paris.")]))

    async def before() -> None:
        async with running_window(first, tmp_path / "config.toml") as window:
            await _ask(window, "What is the capital of France?")

    run(before())
    llm = FakeLlm([reply("About two million.")])
    second = _session(tmp_path, llm)
    assert second.journal_path == first.journal_path

    async def after() -> None:
        async with running_window(second, tmp_path / "config.toml") as window:
            await until(lambda: len(window.transcript_model.bubbles) == 2, what="the last conversation shown")
            assert _texts(window) == ["What is the capital of France?", "Paris."]
            assert not window.transcript.welcome.isVisible()
            await _ask(window, "How many people live there?")
            sent = [m.content for m in llm.calls[0].messages if m.role != "system"]
            assert sent == ["What is the capital of France?", "Paris.", "How many people live there?"]
            assert [t.turn for t in window.trace.turns.values()] == [1, 2]  # restored, and numbering goes on

    run(after())


def test_a_turn_left_open_by_a_crash_is_closed_on_reopen_and_shown_as_unanswered(
    run: Any, qtbot: QtBot, tmp_path: Path
) -> None:
    folder = tmp_path / "sessions" / "2026-01-01_10-00-00"
    folder.mkdir(parents=True)
    journal = folder / "journal.jsonl"
    lines = [
        {"seq": 1, "time": 1.0, "type": "session/start", "version": "0.1.0"},
        {"seq": 2, "time": 2.0, "type": "turn/start", "turn": 1, "source": "voice"},
        {"seq": 3, "time": 2.0, "type": "user/message", "turn": 1, "text": "Are you there?"},
    ]
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"seq": 4, "ty', encoding="utf-8")
    session = _session(tmp_path, FakeLlm())
    assert session.journal_path == journal

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await until(lambda: len(window.transcript_model.bubbles) == 2, what="shown")
            user, parley = window.transcript_model.bubbles
            assert (user.text, user.source) == ("Are you there?", "voice")
            assert parley.note == "Parley was closed before it answered"

    run(scenario())
    ends = [e for e in read_events(journal) if e["type"] == "turn/end"]
    assert [(e["turn"], e["outcome"], e.get("recovered")) for e in ends] == [(1, "aborted", True)]


def test_new_conversation_then_continue_the_first_from_the_past_conversations(
    run: Any, qtbot: QtBot, tmp_path: Path
) -> None:
    session = _session(tmp_path, FakeLlm([reply("Paris."), reply("Blue."), reply("Still Paris.")]))

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await _ask(window, "What is the capital of France?")
            first = session.journal_path
            window.menu.actions["new"].trigger()
            await until(lambda: session.journal_path != first and window.transcript_model.bubbles == [], what="new")
            assert window.transcript.welcome.isVisible()
            await _ask(window, "What colour is the sky?")
            assert session.journal_path.parent.parent == first.parent.parent
            window.menu.actions["copy"].trigger()
            assert QApplication.clipboard().text() == "You: What colour is the sky?\n\nParley: Blue.\n"

            dialog = ConversationsDialog(session.journal_dir, session.journal_path, session.continue_conversation)
            try:
                titles = [dialog.list.item(n).text().splitlines()[1] for n in range(dialog.list.count())]
                assert titles == ["What colour is the sky?  ·  1 turn", "What is the capital of France?  ·  1 turn"]
                assert not dialog.continue_button.isEnabled()  # the first row is the one open now
                dialog.list.setCurrentRow(1)
                assert [b.text for b in dialog.preview_model.bubbles] == ["What is the capital of France?", "Paris."]
                before = first.read_bytes()
                dialog.continue_button.click()
            finally:
                dialog.deleteLater()
            await until(lambda: _texts(window) == ["What is the capital of France?", "Paris."], what="the first again")
            assert session.journal_path == first
            assert first.read_bytes().startswith(before)  # reading it wrote nothing; continuing appends
            await _ask(window, "And again?")
            assert _texts(window)[-2:] == ["And again?", "Still Paris."]

    run(scenario())
    assert len(list_conversations(tmp_path / "sessions")) == 2


def test_reading_a_journal_never_writes_and_a_damaged_one_is_skipped(tmp_path: Path) -> None:
    good = tmp_path / "2026-01-01_10-00-00" / "journal.jsonl"
    bad = tmp_path / "2026-01-02_10-00-00" / "journal.jsonl"
    for path in (good, bad):
        path.parent.mkdir()
    good.write_text('{"seq":1,"time":5.0,"type":"turn/start","turn":1,"source":"text"}\n', encoding="utf-8")
    bad.write_text("not json\n{}\n", encoding="utf-8")
    assert last_conversation(tmp_path) == good
    assert [c.readable for c in list_conversations(tmp_path)] == [False, True]
    events = read_events(good)
    assert bubbles_of(events)[0].note == "Parley was closed before it answered"
    assert good.read_text(encoding="utf-8").count("\n") == 1


def test_menu_has_the_desktop_commands_and_close_closes_in_order(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    session = _session(tmp_path, FakeLlm())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            shortcuts = {name: action.shortcut().toString() for name, action in window.menu.actions.items()}
            assert shortcuts["quit"] == "Ctrl+Q"
            assert shortcuts["close"] == "Ctrl+W"
            assert shortcuts["help"] == "F1"
            assert shortcuts["zoom_in"] == "Ctrl++"
            assert not window.trace_panel.isVisible()  # hidden until asked for
            window.menu.actions["trace"].trigger()
            assert window.trace_panel.isVisible()
            assert window.trace_toggle.isChecked()
            size = window.controls.message.font().pointSizeF()
            window.menu.actions["zoom_in"].trigger()
            assert window.controls.message.font().pointSizeF() > size
            window.menu.actions["about"].trigger()
            about = window.findChild(TextDialog, "about")
            assert about is not None
            assert about.text.toPlainText().startswith("Parley ")  # and the version
            about.close()
            window.menu.actions["close"].trigger()
            await until(window.closed.is_set, what="closed in order")

    run(scenario())
    remembered = (tmp_path / "window.ini").read_text(encoding="utf-8")
    assert "trace_shown=true" in remembered
    assert "zoom=1.1" in remembered


def test_the_window_never_opens_larger_than_the_screen(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    session = _session(tmp_path, FakeLlm())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            room = window.screen().availableGeometry()
            window.setGeometry(QRect(room.x() - 500, room.y(), room.width() * 3, room.height() * 3))
            window.close()
            await until(window.closed.is_set, what="closed")

    run(scenario())
    again = _session(tmp_path, FakeLlm())

    async def reopened() -> None:
        async with running_window(again, tmp_path / "config.toml") as window:
            room = window.screen().availableGeometry()
            assert window.width() <= room.width()
            assert window.height() <= room.height()
            assert room.contains(window.frameGeometry().topLeft())

    run(reopened())


def test_copying_the_conversation_says_so_for_a_moment(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    session = _session(tmp_path, FakeLlm([reply("Blue.")]))
    shown: list[str] = []

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            QApplication.clipboard().setText("before")
            window.menu.actions["copy"].trigger()
            assert window.notice.isVisible()
            assert window.notice.text() == "Nothing to copy yet"
            assert QApplication.clipboard().text() == "before"
            await _ask(window, "What colour is the sky?")
            window.menu.actions["copy"].trigger()
            assert QApplication.clipboard().text() == "You: What colour is the sky?\n\nParley: Blue.\n"
            shown.append(window.notice.text())
            assert window.notice.isVisible()
            await until(lambda: not window.notice.isVisible(), what="the notice goes by itself")
            assert window.chip.text() == "Ready"  # the chip kept saying what Parley does

    run(scenario())
    assert shown == ["Copied the conversation"]
