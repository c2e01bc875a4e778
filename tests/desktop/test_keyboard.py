"""The window by keyboard: Tab order, Space/Enter on the focused control, push-to-talk keys, auto-repeat, Esc."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QImage, QKeyEvent
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.facts import TalkChanged
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from desktop.qt.window import MainWindow
from engine.events import State, TurnStarted
from engine.testing import FakeLlm, reply
from tests.desktop.helpers import running_window, until


@pytest.fixture
def talk_log() -> list[object]:
    return []


def _session(
    tmp_path: Path, log: list[object], *, words: int = 3, ms_per_word: float = 30
) -> tuple[Session, SimulatedVoice]:
    clock = SystemClock()
    voice = SimulatedVoice(clock, ms_per_word=ms_per_word)
    text = " ".join(["fine"] * words) + "."
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=FakeLlm([reply(text)] * 3), clock=clock)
    session.subscribe(lambda e: log.append(e) if isinstance(e, TalkChanged | TurnStarted) else None)
    return session, voice


async def _active(window: MainWindow) -> None:
    window.activateWindow()
    await until(window.isActiveWindow, what="the window is active (keyboard focus works)")


def _held(log: list[object]) -> list[bool]:
    return [e.held for e in log if isinstance(e, TalkChanged)]


def test_tab_walks_the_controls_in_reading_order_and_each_shows_its_focus(
    run: Any, qtbot: QtBot, tmp_path: Path, talk_log: list[object]
) -> None:
    session, _ = _session(tmp_path, talk_log)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await _active(window)
            c = window.controls
            assert QApplication.focusWidget() is c.talk  # voice first: Space talks from the start
            seen: list[QWidget | None] = [QApplication.focusWidget()]
            for _ in range(5):
                qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
                seen.append(QApplication.focusWidget())
            expected = [c.talk, c.hands_free, c.message, c.send_button, window.trace_toggle, window.settings_button]
            assert seen == expected  # Stop is skipped while there is nothing to stop
            for widget in [*expected, window.transcript]:
                assert _looks_different_with_focus(widget), (
                    f"{widget.objectName() or widget.accessibleName()} {widget!r} shows no focus"
                )

    run(scenario())


def _looks_different_with_focus(widget: QWidget) -> bool:
    widget.setFocus(Qt.FocusReason.TabFocusReason)
    focused = widget.grab().toImage()
    widget.clearFocus()
    unfocused = widget.grab().toImage()
    return focused.convertToFormat(QImage.Format.Format_RGB32) != unfocused.convertToFormat(QImage.Format.Format_RGB32)


def test_space_and_enter_work_the_focused_control_instead_of_talking(
    run: Any, qtbot: QtBot, tmp_path: Path, talk_log: list[object]
) -> None:
    session, _ = _session(tmp_path, talk_log)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await _active(window)
            window.trace_toggle.setFocus()
            qtbot.keyClick(window.trace_toggle, Qt.Key.Key_Space)
            assert window.trace_panel.isVisible()
            window.controls.hands_free.setFocus()
            qtbot.keyClick(window.controls.hands_free, Qt.Key.Key_Space)
            assert "voice_not_wired" in window.banners.banners  # it tried: no microphone here
            window.settings_button.setFocus()
            qtbot.keyClick(window.settings_button, Qt.Key.Key_Return)
            await until(lambda: window.settings_dialog is not None, what="settings opened by Enter")
            assert window.settings_dialog is not None
            window.settings_dialog.reject()
            assert _held(talk_log) == []  # none of it talked

    run(scenario())


def test_talk_shortcut_works_from_the_text_box_where_space_types_and_esc_leaves_it(
    run: Any, qtbot: QtBot, tmp_path: Path, talk_log: list[object]
) -> None:
    session, voice = _session(tmp_path, talk_log, words=60, ms_per_word=200)  # 12 s of speech

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await _active(window)
            box = window.controls.message
            box.setFocus()
            qtbot.keyClicks(box, "a b")
            assert box.text() == "a b"
            assert _held(talk_log) == []
            voice.queue_utterance("Tell me everything")
            qtbot.keyPress(box, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
            assert _held(talk_log) == [True]
            qtbot.keyRelease(box, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
            await until(lambda: _held(talk_log) == [True, False], what="released")
            assert box.text() == "a b"  # the shortcut typed nothing
            await until(lambda: window.chip.state is State.SPEAKING, what="speaking")
            qtbot.keyClick(box, Qt.Key.Key_Escape)
            assert not box.hasFocus()
            assert window.transcript.hasFocus()  # where Space talks
            await until(lambda: window.chip.state is State.IDLE, what="Esc stopped the reply")
            assert window.trace.turns[1].title() == "Turn 1 (spoken): stopped by you"

    run(scenario())


def test_auto_repeat_sent_as_release_press_pairs_is_one_hold_and_one_turn(
    run: Any, qtbot: QtBot, tmp_path: Path, talk_log: list[object]
) -> None:
    session, voice = _session(tmp_path, talk_log)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await _active(window)
            window.transcript.setFocus()
            voice.queue_utterance("One sentence, held down")
            voice.queue_utterance("A second one")
            qtbot.keyPress(window.transcript, Qt.Key.Key_Space)
            for _ in range(10):  # Xvfb/VNC: each repeat a plain release and press, a few ms apart
                qtbot.keyRelease(window.transcript, Qt.Key.Key_Space)
                qtbot.keyPress(window.transcript, Qt.Key.Key_Space)
            repeat = QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_Space, Qt.KeyboardModifier.NoModifier, " ", True)
            QApplication.sendEvent(window.transcript, repeat)  # X11's own flagged repeat
            qtbot.keyRelease(window.transcript, Qt.Key.Key_Space)
            await until(lambda: _held(talk_log) == [True, False], what="one hold")
            await until(lambda: window.chip.state is State.IDLE and 1 in window.trace.turns, what="answered")
            assert [e.text for e in talk_log if isinstance(e, TurnStarted)] == ["One sentence, held down"]
            qtbot.keyPress(window.transcript, Qt.Key.Key_Space)  # a real second press, well after
            qtbot.keyRelease(window.transcript, Qt.Key.Key_Space)
            await until(lambda: _held(talk_log) == [True, False, True, False], what="a second hold")

    run(scenario())


def test_the_talk_button_talks_with_space_and_the_mouse(
    run: Any, qtbot: QtBot, tmp_path: Path, talk_log: list[object]
) -> None:
    session, _ = _session(tmp_path, talk_log)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await _active(window)
            talk = window.controls.talk
            talk.setFocus()
            qtbot.keyPress(talk, Qt.Key.Key_Space)
            assert talk.text() == "Release to send"
            qtbot.keyRelease(talk, Qt.Key.Key_Space)
            await until(lambda: _held(talk_log) == [True, False], what="released")
            assert talk.text().startswith("Hold to talk")
            qtbot.mousePress(talk, Qt.MouseButton.LeftButton)
            qtbot.mouseRelease(talk, Qt.MouseButton.LeftButton)
            await until(lambda: _held(talk_log) == [True, False, True, False], what="mouse hold")

    run(scenario())


def test_the_talk_shortcut_can_be_changed_and_is_remembered(
    run: Any, qtbot: QtBot, tmp_path: Path, talk_log: list[object]
) -> None:
    session, _ = _session(tmp_path, talk_log)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            await _active(window)
            window.set_talk_shortcut("F9")
            window.remembered.remember(talk_shortcut="F9")
            assert "F9" in window.controls.talk.text()
            box = window.controls.message
            box.setFocus()
            qtbot.keyPress(box, Qt.Key.Key_F9)
            qtbot.keyRelease(box, Qt.Key.Key_F9)
            await until(lambda: _held(talk_log) == [True, False], what="F9 talked")

    run(scenario())
    assert "F9" in (tmp_path / "window.ini").read_text(encoding="utf-8")
