"""Render the real window on the real models and save a screenshot (the README's picture).

    python -m tests.desktop.screenshot_scene OUT.png [JOURNAL_DIR]      (needs a display: Xvfb under the test)

The app as `parley --fixture barge_in.toml` runs it: the bundled scenario is played into the microphone (the
real Whisper hears it), the embedded SmolLM2 answers, Piper speaks into the recording speaker, and the second
utterance ("Stop. What time is it?") barges in on the story; the unheard rest is struck through and the next
answer follows. The model's sampling seed is fixed, so the picture comes out alike each time (the words may
still vary with the machine's timing); the journal goes to JOURNAL_DIR for the test to check.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

from PySide6.QtWidgets import QApplication

from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.device_lists import DeviceLists
from desktop.model.live_voice import LiveVoice
from desktop.model.session import Session
from desktop.qt import qt_loop
from desktop.qt.style import SHEET
from desktop.qt.window import MainWindow
from desktop.scenario import load_scenario, scenario_path
from engine.events import State
from tests.desktop.helpers import until

SEED = 7
SCENARIO = Path("barge_in.toml")
WITHIN_S = 200  # models loading, the scenario in real time, two replies on 2 cores


def _finished(session: Session) -> bool:
    note = session.problems.get("fixture")
    return note is not None and "has finished" in note.message


async def _scene(out: Path, journal_dir: Path) -> None:
    random.seed(SEED)  # llama.cpp's sampling seed comes from Python's random
    clock = SystemClock()
    voice = LiveVoice(Config(), clock, scenario=load_scenario(scenario_path(SCENARIO)))
    session = Session(Config(), journal_dir=journal_dir, voice=voice, clock=clock)
    window = MainWindow(session, config_path=journal_dir / "config.toml", devices=DeviceLists)
    window.show()
    window.show_trace(True)
    try:
        async with session.running():
            session.set_hands_free(True)  # as `parley --fixture` does: the scenario speaks without pressing Talk
            await until(lambda: _finished(session), within=WITHIN_S, what="the scenario played")
            await until(lambda: 2 in window.trace.turns and window.trace.turns[2].outcome != "running", within=60)
            await until(lambda: window.chip.state in (State.IDLE, State.LISTENING), within=30)
            window.banners.dismiss("fixture")
            await asyncio.sleep(0.3)  # Qt lays out and paints while the loop runs (processEvents here would
            # re-enter the qasync loop from inside a task)
            if not window.grab().save(str(out)):
                raise SystemExit(f"could not write {out}")
            await window.shutdown()
            window.close()
    finally:
        window.deleteLater()


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else Path("docs/screenshot.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    app = QApplication(["parley-screenshot"])
    app.setQuitOnLastWindowClosed(False)
    app.setStyleSheet(SHEET)
    loop = qt_loop.new_loop(app)
    with TemporaryDirectory() as tmp:
        journal_dir = Path(argv[2]) if len(argv) > 2 else Path(tmp)
        try:
            qt_loop.run(loop, _scene(out, journal_dir))
        finally:
            qt_loop.close(loop)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
