"""Render the real window with a scripted conversation and save a screenshot.

    python -m tests.desktop.screenshot_scene OUT.png      (needs a display: Xvfb under the test)

Three turns: a typed greeting, a spoken request whose long reply is interrupted by push-to-talk
(the unheard rest struck through), and a question answered after a rate-limited first attempt.
"""

from __future__ import annotations

import sys
from pathlib import Path
from tempfile import TemporaryDirectory

from PySide6.QtWidgets import QApplication

from desktop.config import Config
from desktop.model.devices import Devices
from desktop.model.live_voice import LiveVoice
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from desktop.qt import qt_loop
from desktop.qt.style import SHEET
from desktop.qt.window import MainWindow
from engine.clock import MonotonicClock
from engine.events import State
from engine.testing import FakeLlm, failure, reply
from tests.desktop.helpers import until

GREETING = "Hi, I'm Parley. I listen, think and answer out loud, and I stop the moment you talk over me."
STORY = (
    "Once upon a time, on a rocky island at the edge of the map, an old keeper named Elias tended a lighthouse. "
    "Every night he climbed one hundred and twelve steps to light the lamp, and every morning he wrote the "
    "weather in a leather book that nobody ever read."
)
PARIS = "Paris. It has been the capital of France for most of the last thousand years."


class _ScriptedVoice(SimulatedVoice):
    """Stands in for the microphone so the picture is the same every time; the window describes it as the
    live voice describes itself (LiveVoice only checks its model files when made, it opens no device)."""

    def __init__(self, clock: MonotonicClock) -> None:
        super().__init__(clock, ms_per_word=150)
        self._hint = LiveVoice(Config(), clock).description

    @property
    def description(self) -> str:
        return self._hint


def _llm(clock: MonotonicClock) -> FakeLlm:
    scripts = [reply(GREETING, delay=0.03), reply(STORY, delay=0.02), failure("RATE_LIMITED", retry_after_ms=900)]
    return FakeLlm([*scripts, reply(PARIS, delay=0.03)], clock=clock, provider="scripted", model="demo script")


async def _play(window: MainWindow, session: Session, voice: SimulatedVoice) -> None:
    session.send_text("Hi! Who are you?")
    await until(lambda: 1 in window.trace.turns and window.trace.turns[1].outcome != "running", within=30)
    voice.queue_utterance("Tell me a story about a lighthouse keeper.")
    session.press_to_talk()
    session.release_to_talk()
    await until(lambda: sum(s.played_ms for s in voice.speech.report(2)) > 3000, within=30)
    voice.queue_utterance("Sorry, what's the capital of France?")
    session.press_to_talk()  # barge-in: the story stops here
    session.release_to_talk()
    await until(lambda: 3 in window.trace.turns and window.trace.turns[3].outcome != "running", within=30)
    await until(lambda: window.chip.state is State.IDLE, within=10)


async def _scene(out: Path) -> None:
    clock = MonotonicClock()
    voice = _ScriptedVoice(clock)
    with TemporaryDirectory() as tmp:
        session = Session(Config(), journal_dir=Path(tmp), voice=voice, llm=_llm(clock), clock=clock)
        window = MainWindow(session, config_path=Path(tmp) / "config.toml", devices=Devices)
        window.show()
        try:
            async with session.running():
                await _play(window, session, voice)
                QApplication.processEvents()
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
    try:
        qt_loop.run(loop, _scene(out))
    finally:
        qt_loop.close(loop)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
