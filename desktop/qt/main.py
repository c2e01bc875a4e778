"""`run_app`: QApplication + qasync loop, the window, and an orderly close (the conversation is disposed first)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import qasync
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from adapters.runtime.clock import SystemClock
from desktop.config import Config, ConfigError, default_path, load
from desktop.model.facts import Problem
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice, VoiceIO, VoiceUnavailable
from desktop.model.wording import bad_config, fixture_problem
from desktop.qt import add_window_options, qt_loop
from desktop.qt.style import SHEET
from desktop.qt.window import MainWindow


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="parley", description="The Parley desktop window.")
    add_window_options(parser)
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
        return run_until_quit(loop, args)
    finally:
        qt_loop.close(loop)


RESTART = -1  # _main's answer when the window asked to be opened again (settings read once, at start)


def run_until_quit(loop: qasync.QEventLoop, args: argparse.Namespace) -> int:
    """Run the window; when it asks for a restart, run it again (it opens on the same conversation)."""
    while (code := qt_loop.run(loop, _main(args))) == RESTART:
        args.quit_when_ready = False
    return code


def _config(args: argparse.Namespace) -> tuple[Config, Path, Problem | None]:
    path = args.config or Path(os.environ.get("PARLEY_CONFIG", "") or default_path())
    try:
        return load(args.config), path, None  # a missing default file means defaults; a named one is an error
    except ConfigError as error:
        return Config(), path, bad_config(str(error))


def _hands_free_asked(args: argparse.Namespace) -> bool:
    """A scenario speaks without pressing Talk; so may the user who asked for it on the command line."""
    return bool(args.fixture is not None or getattr(args, "hands_free", False))


def voice_for(args: argparse.Namespace, config: Config) -> tuple[VoiceIO, list[Problem]]:
    """The microphone and speaker (or the `--fixture` scenario's files); the simulated voice, with the reason
    as a banner, when there is no microphone or the speech models are missing."""
    from desktop.model.live_voice import LiveVoice, probe_devices
    from desktop.scenario import ScenarioError, load_scenario, scenario_path

    clock = SystemClock()
    try:
        if args.fixture is not None:
            return LiveVoice(config, clock, scenario=load_scenario(scenario_path(args.fixture))), []
        microphone, speaker = probe_devices(config.audio)
        if microphone is not None:
            return SimulatedVoice(clock, why=microphone), [microphone]
        return LiveVoice(config, clock, speaker=speaker is None), [speaker] if speaker else []
    except ScenarioError as error:
        problem = fixture_problem(str(error))
    except VoiceUnavailable as error:
        problem = error.problem
    return SimulatedVoice(clock, why=problem), [problem]


async def _main(args: argparse.Namespace) -> int:
    config, path, problem = _config(args)
    voice, notes = voice_for(args, config)
    session = Session(config, journal_dir=args.journal_dir, voice=voice, resume=args.fixture is None)
    window = MainWindow(session, config_path=path)
    for note in [problem, *notes]:
        if note is not None:
            session.raise_problem(note)
    window.show()
    wake = QTimer(window)  # lets Python run its Ctrl+C handler while Qt's loop is in C++
    wake.start(250)
    signalled = _close_on_signals(window)
    ready: float | None = None
    try:
        async with session.running():  # the app's root task group: everything the session starts ends in it
            window.start_hands_free(asked=_hands_free_asked(args), configured=config.audio.hands_free)
            if args.quit_when_ready:
                ready = time.monotonic()  # said once closed: llama.cpp mutes stdout while it loads a model
                window.close()
            await window.closed.wait()
    finally:
        status = signalled()
        wake.stop()
        window.deleteLater()
    if ready is not None:
        print(f"parley: window ready at {ready:.3f} s on the monotonic clock, then closed in order", flush=True)
    return RESTART if window.restart_requested and status == 0 else status


def _close_on_signals(window: MainWindow) -> Callable[[], int]:
    """Ctrl+C, SIGTERM (a desktop session ending, systemd, `timeout`) and SIGHUP (its terminal closed) close the
    window as its close button does:
    the conversation is disposed of and quiescent, its turn closed, first. The returned function puts the previous
    handlers back and gives the exit status: 0, or 128 + the signal that closed the window."""
    caught: list[int] = []

    def close(signum: int, _frame: object) -> None:
        caught.append(signum)
        window.close()

    hangup = [signal.SIGHUP] if hasattr(signal, "SIGHUP") else []  # the terminal it was started from closed
    previous = {sig: signal.signal(sig, close) for sig in (signal.SIGINT, signal.SIGTERM, *hangup)}

    def restore() -> int:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        return 128 + caught[0] if caught else 0

    return restore


if __name__ == "__main__":
    sys.exit(run_app(sys.argv[1:]))
