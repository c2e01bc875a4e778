"""Push-to-talk while Parley speaks cancels the turn; the bubble follows the heard cursor while it speaks and
then shows exactly what the journal kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from desktop.qt.style import INK, UNHEARD
from engine.events import State
from engine.journal import read_events
from engine.testing import FakeLlm, reply
from tests.desktop.helpers import running_window, until

STORY = " ".join(f"word{n}" for n in range(1, 121)) + "."
MS_PER_WORD = 100.0  # the story lasts 12 s: a loaded machine cannot let it finish before the press


def _plain(html: str) -> str:
    document = QTextDocument()
    document.setHtml(html)
    return document.toPlainText()


def test_push_to_talk_while_speaking_cuts_the_reply_where_the_journal_does(
    run: Any, qtbot: QtBot, tmp_path: Path
) -> None:
    clock = SystemClock()
    voice = SimulatedVoice(clock, ms_per_word=MS_PER_WORD)
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=FakeLlm([reply(STORY)]), clock=clock)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            qtbot.keyClicks(window.controls.message, "Tell me a long story")
            qtbot.keyClick(window.controls.message, Qt.Key.Key_Return)
            assert window.controls.message.text() == ""
            await until(lambda: window.chip.state is State.SPEAKING, what="speaking")
            bubble = window.transcript_model.assistant(1)
            assert bubble is not None
            await until(lambda: len((bubble.reading or "").split()) >= 10, what="ten words heard")
            assert bubble.text.strip() == STORY  # streamed in full before the cut
            widget = window.transcript.bubble_widget(bubble)
            reading = bubble.reading
            assert reading is not None
            assert _plain(widget.body.text()) == STORY  # all of it shown, the heard part in ink
            assert f'color:{INK}">{reading}</span>' in widget.body.text()
            assert UNHEARD in widget.body.text()
            assert "line-through" not in widget.body.text()  # grey, not struck: it may still be heard
            qtbot.mousePress(window.controls.talk, Qt.MouseButton.LeftButton)
            await until(lambda: bubble.settled, what="settled")
            qtbot.mouseRelease(window.controls.talk, Qt.MouseButton.LeftButton)
            await until(lambda: window.chip.state is State.IDLE, what="idle")

            messages = [e for e in read_events(session.journal_path) if e["type"] == "assistant/message"]
            assert len(messages) == 1
            assert messages[0]["interrupted"] is True
            heard = messages[0]["text"]
            assert 10 <= len(heard.split()) < 120
            assert bubble.heard == heard
            assert heard.startswith(reading)  # the cursor only moved on; the cut is where it stood
            assert bubble.interrupted
            assert bubble.unheard == STORY[len(heard) :].strip()
            assert "line-through" in widget.body.text()
            assert _plain(widget.body.text()) == f"{heard} {bubble.unheard}"
            assert widget.marker.isVisible()
            ends = [e for e in read_events(session.journal_path) if e["type"] == "turn/end"]
            assert [e["outcome"] for e in ends] == ["aborted"]
            assert "voice_not_wired" in window.banners.banners  # the release had no microphone behind it

    run(scenario())
