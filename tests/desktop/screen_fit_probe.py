"""Open every window of the app on whatever screen Qt was given and print where each one lies, as JSON.

    QT_QPA_PLATFORM=offscreen:configfile=SCREEN.json QT_SCALE_FACTOR=1.5 python -m tests.desktop.screen_fit_probe DIR

Scaling is fixed when the QApplication starts, so test_screen_fit runs this in a process of its own. Each entry is
the window's frame (x, y, width, height, in logical pixels) and whether its button box (Save, Close…) lies inside.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QAbstractButton, QApplication, QDialog, QDialogButtonBox, QWidget

from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from desktop.qt import qt_loop
from desktop.qt.style import SHEET
from desktop.qt.window import MainWindow
from engine.testing import FakeLlm, reply
from tests.desktop.helpers import DEVICES, until

LONG = "Tell me a long story about a lighthouse keeper who counts the ships that pass his island every night"


def _place(widget: QWidget) -> dict[str, object]:
    frame = widget.frameGeometry()
    boxes = widget.findChildren(QDialogButtonBox)
    buttons = [b for box in boxes for b in box.findChildren(QAbstractButton) if b.isVisible()]
    inside = all(widget.rect().contains(QRect(b.mapTo(widget, QPoint(0, 0)), b.size())) for b in buttons)
    return {"frame": [frame.x(), frame.y(), frame.width(), frame.height()], "buttons_inside": inside}


async def _smallest(window: MainWindow) -> dict[str, object]:
    """The window shrunk as far as it goes: the Talk button and the hands-free box keep their whole text."""
    size = window.size()
    window.resize(1, 1)
    await until(lambda: window.width() < size.width(), what="shrunk")
    controls = window.controls
    cut = [w.objectName() or w.text() for w in (controls.talk, controls.hands_free)
           if w.width() < w.sizeHint().width() or w.height() < w.minimumSizeHint().height()]  # fmt: skip
    smallest = {"size": [window.width(), window.height()], "cut": cut}
    window.resize(size)
    return smallest


def _answered(window: MainWindow, turns: int) -> bool:
    done = [t for t in window.trace.turns.values() if t.outcome != "running"]
    return len(done) >= turns


async def _dialog(window: MainWindow, open_it: object, name: str, out: dict[str, object]) -> None:
    before = set(window.findChildren(QDialog))
    open_it()  # type: ignore[operator]
    await until(lambda: any(d.isVisible() for d in set(window.findChildren(QDialog)) - before), what=name)
    dialog = next(d for d in set(window.findChildren(QDialog)) - before if d.isVisible())
    out[name] = _place(dialog)
    dialog.reject()
    dialog.deleteLater()


async def _probe(root: Path) -> dict[str, object]:
    clock = SystemClock()
    llm = FakeLlm([reply("Once upon a time. " * 20), reply("Fine.")])
    session = Session(Config(), journal_dir=root / "sessions", voice=SimulatedVoice(clock, ms_per_word=1), llm=llm,
                      clock=clock, resume=True)  # fmt: skip
    window = MainWindow(session, config_path=root / "config.toml", devices=lambda: DEVICES)
    window.show()
    screen = window.screen().availableGeometry()
    out: dict[str, object] = {"screen": [screen.x(), screen.y(), screen.width(), screen.height()]}
    try:
        async with session.running():
            for number, text in enumerate((LONG, "And then?"), start=1):
                session.send_text(text)
                await until(partial(_answered, window, number), what=f"answered {text}")
            window.menu.actions["new"].trigger()
            out["window"] = _place(window)
            out["smallest"] = await _smallest(window)
            await _dialog(window, window.open_settings, "settings", out)
            await _dialog(window, window.open_conversations, "conversations", out)
            await _dialog(window, window.menu.actions["help"].trigger, "help", out)
            await _dialog(window, window.menu.actions["about"].trigger, "about", out)
            await window.shutdown()
            window.close()
    finally:
        window.deleteLater()
    return out


def main(argv: list[str]) -> int:
    app = QApplication(["parley-screen-fit"])
    app.setQuitOnLastWindowClosed(False)
    app.setStyleSheet(SHEET)
    loop = qt_loop.new_loop(app)
    try:
        print(json.dumps(qt_loop.run(loop, _probe(Path(argv[1])))))
    finally:
        qt_loop.close(loop)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
