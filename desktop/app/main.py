"""`run_app`: QApplication + qasync loop, the window, and an orderly close (the conversation is disposed first)."""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from desktop.app import qt_loop
from desktop.app.facts import Problem
from desktop.app.session import Session
from desktop.app.style import SHEET
from desktop.app.voice import SimulatedVoice, VoiceIO
from desktop.app.window import MainWindow
from desktop.app.wording import bad_config
from desktop.config import Config, ConfigError, default_path, load
from engine.clock import MonotonicClock

FIXTURE_LATER = Problem(
    "Fixture playback in the window arrives with the voice pipeline",
    "For now the window runs the simulated voice; type or hold Talk to try it",
    "fixture",
    "info",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="parley", description="The Parley desktop window.")
    parser.add_argument("--config", type=Path, help="settings file (default: the user config dir)")
    parser.add_argument("--journal-dir", type=Path, help="where sessions/<time>/journal.jsonl go")
    parser.add_argument("--fixture", type=Path, help="play a scenario file into the window")
    return parser


def run_app(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    app = QApplication.instance() or QApplication(["parley"])
    assert isinstance(app, QApplication)
    app.setApplicationName("Parley")
    app.setQuitOnLastWindowClosed(False)  # the window closes itself once the conversation is quiescent
    app.setStyleSheet(SHEET)
    loop = qt_loop.new_loop(app)
    try:
        return qt_loop.run(loop, _main(args))
    finally:
        qt_loop.close(loop)


def _config(args: argparse.Namespace) -> tuple[Config, Path, Problem | None]:
    path = args.config or Path(os.environ.get("PARLEY_CONFIG", "") or default_path())
    try:
        return load(path), path, None
    except ConfigError as error:
        return Config(), path, bad_config(str(error))


def voice_for(args: argparse.Namespace) -> tuple[VoiceIO, list[Problem]]:
    """The extension point for the real pipeline and for fixture playback (a VoiceIO that plays a scenario)."""
    voice = SimulatedVoice(MonotonicClock())
    return voice, [FIXTURE_LATER] if args.fixture else []


async def _main(args: argparse.Namespace) -> int:
    config, path, problem = _config(args)
    voice, notes = voice_for(args)
    session = Session(config, journal_dir=args.journal_dir, voice=voice)
    window = MainWindow(session, config_path=path)
    for note in [problem, *notes]:
        if note is not None:
            session.raise_problem(note)
    window.show()
    wake = QTimer(window)  # lets Python run its Ctrl+C handler while Qt's loop is in C++
    wake.start(250)
    previous = signal.signal(signal.SIGINT, lambda *_: window.close())
    try:
        await session.start()
        await window.closed.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
        wake.stop()
        window.deleteLater()
    return 0
