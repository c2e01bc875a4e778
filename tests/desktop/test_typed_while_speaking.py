"""A message typed while Parley speaks shows at once, marked as waiting, and is answered after the reply; Stop
drops it, and it says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.session import Session
from desktop.model.transcript_model import DROPPED, QUEUED
from desktop.model.voice import SimulatedVoice
from desktop.qt.window import MainWindow
from engine.events import State
from engine.journal import read_events
from engine.testing import FakeLlm, reply
from tests.desktop.helpers import running_window, until

STORY = " ".join(f"word{n}" for n in range(1, 41)) + "."
MS_PER_WORD = 100.0  # the story lasts 4 s: time to type over it on a loaded machine


def _session(tmp_path: Path, llm: FakeLlm) -> Session:
    clock = SystemClock()
    voice = SimulatedVoice(clock, ms_per_word=MS_PER_WORD)
    return Session(Config(), journal_dir=tmp_path, voice=voice, llm=llm, clock=clock)


def _type(window: MainWindow, qtbot: QtBot, text: str) -> None:
    qtbot.keyClicks(window.controls.message, text)
    qtbot.keyClick(window.controls.message, Qt.Key.Key_Return)
    assert window.controls.message.text() == ""


async def _over_the_story(window: MainWindow, qtbot: QtBot, text: str) -> None:
    """Ask for the story, and type `text` while Parley tells it."""
    _type(window, qtbot, "Tell me a story")
    await until(lambda: window.chip.state is State.SPEAKING, what="speaking")
    _type(window, qtbot, text)


def _said(window: MainWindow) -> list[tuple[str, int, str]]:
    return [(b.text, b.turn, b.note) for b in window.transcript_model.bubbles if b.role == "user"]


def test_typed_while_parley_speaks_shows_at_once_and_is_answered_after(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    session = _session(tmp_path, FakeLlm([reply(STORY), reply("Then they ate.")]))

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await _over_the_story(window, qtbot, "And then?")
            assert _said(window) == [("Tell me a story", 1, ""), ("And then?", 0, QUEUED)], "shown at once"
            waiting = window.transcript_model.bubbles[-1]
            widget = window.transcript.bubble_widget(waiting)
            assert widget.note.isVisibleTo(widget)
            assert widget.note.text() == QUEUED
            story = window.transcript_model.assistant(1)
            assert story is not None
            assert not story.settled, "the story goes on meanwhile"

            await until(lambda: waiting.turn == 2, within=20, what="its turn came")
            assert _said(window) == [("Tell me a story", 1, ""), ("And then?", 2, "")], "the same bubble, not twice"
            assert not widget.note.isVisibleTo(widget)
            await until(lambda: window.chip.state is State.IDLE and window.trace.turns[2].outcome != "running")
            second = window.transcript_model.assistant(2)
            assert second is not None
            assert second.heard == "Then they ate."
            roles = [(b.role, b.turn) for b in window.transcript_model.bubbles]
            assert roles == [("user", 1), ("assistant", 1), ("user", 2), ("assistant", 2)]

    run(scenario())
    ends = [e["outcome"] for e in read_events(session.journal_path) if e["type"] == "turn/end"]
    assert ends == ["completed", "completed"], "the story was not cut by the typed message"


def test_stop_drops_a_waiting_message_and_marks_it(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    session = _session(tmp_path, FakeLlm([reply(STORY), reply("Never sent.")]))

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await _over_the_story(window, qtbot, "And then?")
            window.stop_button.click()
            await until(lambda: window.chip.state is State.IDLE and window.trace.turns[1].outcome != "running")
            assert _said(window) == [("Tell me a story", 1, ""), ("And then?", 0, DROPPED)]
            assert list(window.trace.turns) == [1]

    run(scenario())
    said = [e["text"] for e in read_events(session.journal_path) if e["type"] == "user/message"]
    assert said == ["Tell me a story"]
