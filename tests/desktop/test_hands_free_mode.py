"""Hands-free in the window: the empty window's hint says how to interrupt in the mode in use, and the mode the
person chose comes back after a relaunch (and after "Restart now", which is one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from desktop.qt.transcript import WELCOME, WELCOME_HANDS_FREE
from engine.testing import FakeLlm
from tests.desktop.helpers import running_window


class ListeningVoice(SimulatedVoice):
    """A voice with a microphone that can listen hands-free (nothing is ever heard)."""

    simulated = False

    def __init__(self) -> None:
        super().__init__(SystemClock())
        self.listening = False

    def start_listening(self) -> None:
        self.listening = True

    def stop_listening(self) -> None:
        self.listening = False


def _session(tmp_path: Path, voice: ListeningVoice) -> Session:
    return Session(Config(), journal_dir=tmp_path / "journals", voice=voice, llm=FakeLlm())


def test_the_empty_window_hint_follows_the_mode(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    session = _session(tmp_path, ListeningVoice())

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            welcome = window.transcript.welcome
            assert welcome.text() == WELCOME
            assert "Talk over Parley at any time" not in welcome.text()  # push-to-talk: the voice alone does not
            assert "Hold Talk while Parley speaks" in welcome.text()
            window.controls.hands_free.click()
            assert welcome.text() == WELCOME_HANDS_FREE
            assert "Talk over Parley at any time: it stops at once" in welcome.text()
            window.menu.actions["hands_free"].trigger()  # Ctrl+L
            assert not session.hands_free
            assert welcome.text() == WELCOME

    run(scenario())


def test_hands_free_comes_back_after_a_relaunch(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    config_path = tmp_path / "config.toml"

    async def launch(*, choose: bool | None, configured: bool = False) -> bool:
        """One run of the window as run_app makes it; `choose` ticks or clears Hands-free; its state at start."""
        voice = ListeningVoice()
        session = _session(tmp_path, voice)
        async with running_window(session, config_path) as window:
            window.start_hands_free(asked=False, configured=configured)
            at_start = session.hands_free
            assert window.controls.hands_free.isChecked() == at_start == voice.listening
            assert window.transcript.welcome.text() == (WELCOME_HANDS_FREE if at_start else WELCOME)
            if choose is not None and choose != at_start:
                window.controls.hands_free.click()
            assert session.hands_free == (at_start if choose is None else choose)
        return at_start

    async def scenario() -> None:
        assert not await launch(choose=True)  # first run: the default, push-to-talk
        assert await launch(choose=None)  # relaunched: hands-free again
        assert await launch(choose=False)
        assert not await launch(choose=None, configured=True)  # the person's last choice beats the file's default

    run(scenario())
    assert "hands_free=false" in (tmp_path / "window.ini").read_text(encoding="utf-8")
