"""What the window remembers between runs (size and place, the trace panel, zoom, the talk shortcut, hands-free),
and a first size that fits the screen whatever its scaling.

Kept in `window.ini` beside the settings file (Qt's QSettings in INI format), so a `--config` elsewhere keeps
its own, and tests never touch the user's.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from PySide6.QtCore import QByteArray, QRect, QSettings, QSize
from PySide6.QtWidgets import QWidget

from adapters.runtime.private_files import PRIVATE_FILE, private_dir
from desktop.qt.fit import SCREEN_SHARE
from desktop.qt.talk_keys import DEFAULT_SHORTCUT

PREFERRED = QSize(1060, 720)
ZOOMS = (0.8, 0.9, 1.0, 1.1, 1.25, 1.4, 1.6, 1.8, 2.0)


class WindowState:
    def __init__(self, config_path: Path) -> None:
        self._path = config_path.with_name("window.ini")
        self._settings = QSettings(str(self._path), QSettings.Format.IniFormat)

    @property
    def trace_shown(self) -> bool:
        return _flag(self._settings.value("trace_shown", False))

    @property
    def zoom(self) -> float:
        try:
            value = float(self._settings.value("zoom", 1.0))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return 1.0
        return value if value in ZOOMS else 1.0

    @property
    def shortcut(self) -> str:
        return str(self._settings.value("talk_shortcut", DEFAULT_SHORTCUT) or DEFAULT_SHORTCUT)

    @property
    def hands_free(self) -> bool | None:
        """Hands-free as the person last set it; None when they never did."""
        value = self._settings.value("hands_free")
        return None if value is None else _flag(value)

    def hands_free_at_start(self, *, asked: bool, configured: bool) -> bool:
        """Asked for (--hands-free) wins; else the person's last choice; else the settings file's default."""
        remembered = self.hands_free
        return asked or (configured if remembered is None else remembered)

    def remember(self, **values: object) -> None:
        for key, value in values.items():
            self._settings.setValue(key, value)
        try:
            private_dir(self._path.parent)  # like config.toml: 0700 if Parley makes the folder, the file 0600
        except OSError:
            return  # the window's size is not worth an error; the settings keep it in memory
        self._settings.sync()
        with contextlib.suppress(OSError):
            os.chmod(self._path, PRIVATE_FILE)

    def restore(self, window: QWidget) -> None:
        """The remembered size and place, else the preferred size; either way inside the available screen."""
        geometry = self._settings.value("geometry")
        if not isinstance(geometry, QByteArray) or not window.restoreGeometry(geometry):
            window.resize(PREFERRED)
        fit_to_screen(window)

    def save(self, window: QWidget, *, trace_shown: bool) -> None:
        self.remember(geometry=window.saveGeometry(), trace_shown=trace_shown)


def fit_to_screen(window: QWidget) -> None:
    """Never larger than the screen (at 150 % scaling 1060x720 logical pixels do not fit on 1280x900), and
    moved back onto it when the remembered place is off it."""
    screen = window.screen()
    if screen is None:
        return
    room = screen.availableGeometry()
    most = QSize(int(room.width() * SCREEN_SHARE), int(room.height() * SCREEN_SHARE))
    size = window.size().boundedTo(most).expandedTo(window.minimumSizeHint().boundedTo(room.size()))
    if size != window.size():
        window.resize(size)
    frame = QRect(window.pos(), window.frameGeometry().size().boundedTo(room.size()))
    if not room.contains(frame):
        x = min(max(frame.x(), room.x()), room.right() - frame.width() + 1)
        y = min(max(frame.y(), room.y()), room.bottom() - frame.height() + 1)
        window.move(x, y)


def _flag(value: object) -> bool:
    return value is True or str(value).lower() in ("true", "1")


def next_zoom(current: float, step: int) -> float:
    """The next zoom level up (step 1) or down (-1); 0 is back to 100 %."""
    if step == 0:
        return 1.0
    index = min(range(len(ZOOMS)), key=lambda i: abs(ZOOMS[i] - current))
    return ZOOMS[min(max(index + step, 0), len(ZOOMS) - 1)]
