"""The leak check itself: it finds a stray timer and says where it was created."""

from __future__ import annotations

import tracemalloc

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLabel

from tests.desktop import leaks


def test_the_checker_names_the_line_that_created_a_stray_timer_and_widget(qapp: QApplication) -> None:
    assert tracemalloc.is_tracing()
    before = list(qapp.topLevelWidgets())
    stray = QTimer()
    stray.start(1000)
    window = QLabel("stray")
    window.show()
    try:
        found = leaks.live_widgets(qapp, before), leaks.active_timers(), [], []
        text = leaks.report(*found)
        assert "QTimer (interval 1000 ms) still active" in text
        assert "widget QLabel" in text
        assert text.count("test_leak_check.py") >= 2
    finally:
        stray.stop()
        window.close()
        window.deleteLater()
