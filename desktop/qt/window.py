"""The main window: composes the views and subscribes them to the session; closing waits for quiescence."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop.model.devices import Devices, list_devices
from desktop.model.facts import EngineClosed, EngineOpened
from desktop.model.session import Session
from desktop.model.trace_model import TraceBook
from desktop.model.transcript_model import TranscriptModel
from desktop.qt.banner import BannerArea
from desktop.qt.controls import Controls, SpaceToTalk
from desktop.qt.settings_dialog import SettingsDialog
from desktop.qt.state_chip import StateChip
from desktop.qt.style import named
from desktop.qt.trace_panel import TracePanel
from desktop.qt.transcript import WELCOME, WELCOME_SIMULATED, TranscriptView
from engine.events import StateChanged


class MainWindow(QMainWindow):
    def __init__(self, session: Session, *, config_path: Path, devices: Callable[[], Devices] = list_devices) -> None:
        super().__init__()
        self.setWindowTitle("Parley")
        self.resize(1060, 720)
        self.session = session
        self.closed = asyncio.Event()
        self._config_path, self._devices = config_path, devices
        self.transcript_model, self.trace = TranscriptModel(), TraceBook()
        welcome = WELCOME_SIMULATED if session.voice.simulated else WELCOME
        self.transcript = TranscriptView(self.transcript_model, welcome)
        self.trace_panel = TracePanel(self.trace)
        self.chip = StateChip(session.clock)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the reply now and drop anything queued (Esc)")
        self.stop_button.setShortcut(Qt.Key.Key_Escape)
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(session.stop)
        self.model_label = named(QLabel("Starting…"), "hint")
        self.model_label.setToolTip(f"This session's journal: {session.journal_path}")
        self.trace_toggle = QPushButton("Hide trace")
        self.trace_toggle.setCheckable(True)
        self.trace_toggle.setChecked(True)
        self.trace_toggle.toggled.connect(self._show_trace)
        self.settings_button = QPushButton("Settings…")
        self.settings_button.clicked.connect(self.open_settings)
        self.banners = BannerArea(self.open_settings)
        self.controls = Controls(session)
        self.settings_dialog: SettingsDialog | None = None
        self._lay_out()
        self._space = SpaceToTalk(self, session)
        app = QApplication.instance()
        assert app is not None, "create the QApplication first"
        self._app = app
        app.installEventFilter(self._space)
        self._unsubscribe = session.subscribe(self._on_event)
        self._closing = False
        self._may_close = False

    def _lay_out(self) -> None:
        top = QHBoxLayout()
        top.setContentsMargins(16, 12, 16, 0)
        top.addWidget(self.chip)
        top.addWidget(self.stop_button)
        top.addStretch(1)
        top.addWidget(self.model_label)
        top.addWidget(self.trace_toggle)
        top.addWidget(self.settings_button)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.transcript)
        split.addWidget(self.trace_panel)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setSizes([700, 340])
        split.setContentsMargins(16, 8, 16, 0)
        column = QVBoxLayout()
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(top)
        column.addWidget(self.banners)
        column.addWidget(split, 1)
        column.addWidget(self.controls)
        central = QWidget()
        central.setLayout(column)
        self.setCentralWidget(central)

    def _on_event(self, event: Any) -> None:
        for view in (self.transcript_model, self.trace, self.chip, self.banners, self.controls):
            view.handle(event)
        if isinstance(event, StateChanged):
            self.stop_button.setEnabled(event.turn is not None)
        elif isinstance(event, EngineOpened):
            self.model_label.setText(f"Model: {event.label}")
        elif isinstance(event, EngineClosed):
            self.model_label.setText("No language model running")

    def _show_trace(self, shown: bool) -> None:
        self.trace_panel.setVisible(shown)
        self.trace_toggle.setText("Hide trace" if shown else "Show trace")

    def open_settings(self) -> None:
        if self.settings_dialog is not None:
            self.settings_dialog.raise_()
            return
        dialog = SettingsDialog(self.session.config, self._config_path, self.session.keys, self._devices(), self)
        dialog.saved.connect(self.session.apply_settings)
        dialog.finished.connect(self._settings_closed)
        self.settings_dialog = dialog
        dialog.open()

    def _settings_closed(self) -> None:
        if self.settings_dialog is not None:
            self.settings_dialog.deleteLater()
            self.settings_dialog = None

    async def shutdown(self) -> None:
        """Dispose the conversation and wait until it is quiescent; then the window may close."""
        if self._may_close:
            return
        if self.settings_dialog is not None:
            self.settings_dialog.reject()
        await self.session.aclose()
        self._detach()

    def _detach(self) -> None:
        if self._may_close:
            return
        self._unsubscribe()
        self.chip.stop()
        self._app.removeEventFilter(self._space)
        self._may_close = True
        self.closed.set()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._may_close:
            event.accept()
            return
        event.ignore()
        if not self._closing:
            self._closing = True
            self.setEnabled(False)
            if self.settings_dialog is not None:
                self.settings_dialog.reject()
            self.session.close_soon(self._closed_in_order)

    def _closed_in_order(self) -> None:
        self._detach()
        self.close()
