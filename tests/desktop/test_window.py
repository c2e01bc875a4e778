"""First run and failures: clear banners, a usable window, Space to talk, and run_app's orderly close."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config, LlmConfig
from desktop.model.facts import TalkChanged
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from desktop.qt import run_app
from desktop.qt.window import MainWindow
from engine.journal import read_events
from engine.testing import FakeLlm, reply
from tests.desktop.helpers import running_window, until


def test_a_missing_model_is_a_banner_and_the_window_stays_usable(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    config = replace(Config(), llm=LlmConfig(provider="local", local_model_path=str(tmp_path / "nope.gguf")))
    session = Session(config, journal_dir=tmp_path)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            banner = window.banners.banners["missing_model"]
            assert "nope.gguf" in banner.label.text()
            assert "Settings" in banner.label.text()
            assert window.model_label.text() == "No language model running"
            qtbot.keyClicks(window.controls.message, "hello")
            qtbot.keyClick(window.controls.message, Qt.Key.Key_Return)
            assert window.controls.message.text() == "hello"  # kept: nothing could answer it
            window.controls.hands_free.click()
            assert "voice_not_wired" in window.banners.banners
            assert not window.controls.hands_free.isChecked()  # no pretending

    run(scenario())
    assert not session.journal_path.exists()


def test_space_talks_from_the_window_but_types_in_the_text_box(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    clock = SystemClock()
    voice = SimulatedVoice(clock, ms_per_word=20)
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=FakeLlm([reply("Paris.")]), clock=clock)
    talk: list[bool] = []
    session.subscribe(lambda e: talk.append(e.held) if isinstance(e, TalkChanged) else None)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            window.controls.message.setFocus()
            qtbot.keyClicks(window.controls.message, "a b")
            assert window.controls.message.text() == "a b"
            assert talk == []
            window.transcript.setFocus()
            voice.queue_utterance("What is the capital of France?")
            qtbot.keyPress(window.transcript, Qt.Key.Key_Space)
            assert window.controls.talk.text() == "Release to send"
            qtbot.keyRelease(window.transcript, Qt.Key.Key_Space)
            await until(lambda: talk == [True, False], what="released (after the auto-repeat window)")
            await until(lambda: window.chip.text() == "Ready" and 1 in window.trace.turns, what="answered")
            user = window.transcript_model.bubbles[0]
            assert (user.source, user.text) == ("voice", "What is the capital of France?")
            assert window.transcript.bubble_widget(user).who.text() == "You (spoken)"

    run(scenario())


def test_run_app_shows_the_window_and_closes_only_after_the_conversation_is_disposed(
    qapp: QApplication, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[llm]\nprovider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n', encoding="utf-8")
    seen: list[str] = []

    def close_the_window() -> None:
        windows = [w for w in qapp.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        if not windows or windows[0].model_label.text().startswith("Starting"):
            QTimer.singleShot(20, close_the_window)
            return
        seen.append(windows[0].windowTitle())
        seen.extend(sorted(windows[0].banners.banners))
        windows[0].close()

    QTimer.singleShot(0, close_the_window)
    argv = ["--config", str(config), "--journal-dir", str(tmp_path / "sessions"), "--fixture", "x.toml"]
    assert run_app(argv) == 0
    assert seen == ["Parley", "fixture"]
    (journal,) = (tmp_path / "sessions").glob("*/journal.jsonl")
    assert [e["type"] for e in read_events(journal)] == ["session/start"]


def test_closing_mid_reply_disposes_the_turn_before_the_window_goes(run: Any, tmp_path: Path) -> None:
    clock = SystemClock()
    story = " ".join(["and then the sea rose again"] * 20)
    voice = SimulatedVoice(clock, ms_per_word=20)
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=FakeLlm([reply(story)]), clock=clock)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            session.send_text("Tell me about the sea")
            await until(lambda: sum(s.played_ms for s in voice.speech.report(1)) > 100, what="speaking")
            window.close()
            assert window.isVisible()  # not yet: the conversation is being disposed first
            await asyncio.wait_for(window.closed.wait(), 10)
            assert not window.isVisible()
            assert session.conversation is None

    run(scenario())
    events = read_events(session.journal_path)
    assert [e["outcome"] for e in events if e["type"] == "turn/end"] == ["aborted"]
    (message,) = [e for e in events if e["type"] == "assistant/message"]
    assert message["interrupted"] is True
