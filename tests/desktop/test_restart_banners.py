"""Issue 37: no "microphone cannot be used" banner flashes while Parley restarts. A device that goes quiet as
the old pipeline closes, or while the new one loads its models (loading starves the audio for a moment), is not
a failure to show; one that is still failing once Parley has settled is shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from desktop.config import Config
from desktop.model.facts import ProblemRaised, StartedUp
from desktop.model.session import Session
from desktop.qt.banner import Banner
from engine.testing import FakeLlm
from tests.desktop.helpers import QUIET, LoadingVoice, running_window, until


class BannerSpy(QObject):
    """Every time a banner becomes visible, with the facts seen so far (the order of the two)."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[str] = []

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show and isinstance(watched, Banner):
            self.log.append(f"shown {watched.problem.kind}")
        return False

    def fact(self, event: Any) -> None:
        if isinstance(event, ProblemRaised):
            self.log.append(f"raised {event.problem.kind}")
        elif isinstance(event, StartedUp):
            self.log.append("started up")


def test_no_device_banner_while_parley_restarts(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    app = QApplication.instance()
    assert app is not None
    spy = BannerSpy()
    app.installEventFilter(spy)
    config_path = tmp_path / "config.toml"

    async def first_run() -> None:
        voice = LoadingVoice()
        session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=FakeLlm())
        session.subscribe(spy.fact)
        async with running_window(session, config_path) as window:
            window.controls.hands_free.click()
            voice.quiet()  # while the models load
            voice.loaded.set()
            await until(lambda: "started up" in spy.log, what="started up")
            window.restart()  # "Restart now"
            await until(window.closed.is_set, what="closed in order for the restart")
            assert window.restart_requested

    async def second_run() -> None:
        voice = LoadingVoice()
        session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=FakeLlm(), resume=True)
        session.subscribe(spy.fact)
        async with running_window(session, config_path) as window:
            window.start_hands_free(asked=False, configured=False)
            assert voice.listening
            voice.quiet()  # while the models load
            voice.loaded.set()
            await until(lambda: spy.log.count("started up") == 2, what="started up again")
            voice.quiet()  # a model loading right after the speech models starves the audio too
            assert session.hands_free
            assert voice.listening
            assert window.controls.hands_free.isChecked()
            assert voice.events is not None
            voice.events.problem(QUIET)  # ... and this time it does not come back
            voice.events.listening_stopped()
            assert session.hands_free  # not yet: it may come back
            await until(lambda: "no_microphone" in window.banners.banners, what="a failure that lasts is shown")
            await until(lambda: window.banners.banners["no_microphone"].isVisible(), what="visible")
            assert not session.hands_free
            assert not window.controls.hands_free.isChecked()

    try:
        run(first_run())
        run(second_run())
    finally:
        app.removeEventFilter(spy)
    assert [entry for entry in spy.log if "no_microphone" in entry or "started" in entry] == [
        "started up",
        "started up",
        "raised no_microphone",
        "shown no_microphone",
    ]
