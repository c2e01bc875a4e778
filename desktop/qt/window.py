"""The main window: composes the views and subscribes them to the session; closing waits for quiescence."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop.config import Config
from desktop.model.busy import FOCUS, busy_question
from desktop.model.conversations import bubbles_of, plain_text
from desktop.model.device_lists import DeviceLists, device_lists
from desktop.model.facts import ConversationBusy, ConversationOpened, EngineClosed, EngineOpened, HandsFreeChanged
from desktop.model.model_shelf import Shelf
from desktop.model.session import Session
from desktop.model.settings_rules import restart_needed
from desktop.model.trace_model import TraceBook
from desktop.model.transcript_model import TranscriptModel
from desktop.model.wording import key_not_stored, not_forward, restart_question
from desktop.qt.banner import BannerArea
from desktop.qt.busy import ComeForward, ask, ask_to_come_forward
from desktop.qt.controls import Controls
from desktop.qt.conversations_dialog import ConversationsDialog
from desktop.qt.models_dialog import ModelsDialog
from desktop.qt.settings_dialog import SettingsDialog
from desktop.qt.state_chip import StateChip
from desktop.qt.style import named, sheet
from desktop.qt.talk_keys import PushToTalk, TalkKeys
from desktop.qt.trace_panel import TracePanel
from desktop.qt.transcript import TranscriptView, welcome_for
from desktop.qt.window_menu import Commands, Menu
from desktop.qt.window_state import WindowState, next_zoom
from engine.events import StateChanged

READING_MS = 120  # how often the bubble being spoken follows the heard cursor
NOTICE_MS = 2500  # how long a short confirmation ("Copied the conversation") stays beside the chip


class MainWindow(QMainWindow):
    def __init__(
        self,
        session: Session,
        *,
        config_path: Path,
        devices: Callable[[], DeviceLists] = device_lists,
        shelf: Shelf | None = None,
    ) -> None:
        super().__init__()
        self.setWindowTitle("Parley")
        self.session = session
        self.closed = asyncio.Event()
        self.restart_requested = False
        self._config_path, self._devices = config_path, devices
        self.remembered = WindowState(config_path)
        self.transcript_model, self.trace = TranscriptModel(), TraceBook()
        self.transcript = TranscriptView(
            self.transcript_model, welcome_for(simulated=session.voice.simulated, hands_free=session.hands_free)
        )
        self.trace_panel = TracePanel(self.trace)
        self.chip = StateChip(session.clock, starting=session.starting)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the reply now and drop anything queued (Esc)")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(session.stop)
        self.model_label = named(QLabel("Starting…"), "hint")
        self.notice = named(QLabel(), "hint")  # a short confirmation of what a command did
        self.notice.setAccessibleName("Notice")
        self.notice.hide()
        self._notice_timer = QTimer(self)
        self._notice_timer.setSingleShot(True)
        self._notice_timer.setInterval(NOTICE_MS)
        self._notice_timer.timeout.connect(self.notice.hide)
        self.trace_toggle = QPushButton("Show trace")
        self.trace_toggle.setCheckable(True)
        self.trace_toggle.toggled.connect(self.show_trace)
        self.settings_button = QPushButton("Settings…")
        self.settings_button.clicked.connect(self.open_settings)
        self.banners = BannerArea(self.open_settings)
        self.push = PushToTalk(session, self)
        self.controls = Controls(session, self.push)
        self.controls.hands_free.toggled.connect(self._hands_free_chosen)  # after the session tried it
        self.settings_dialog: SettingsDialog | None = None
        self.models_dialog: ModelsDialog | None = None
        self._shelf = shelf
        self.menu = Menu(self, self._commands())
        self._reading = QTimer(self)
        self._reading.setInterval(READING_MS)
        self._reading.timeout.connect(self._follow_reading)
        self._lay_out()
        self._keys = TalkKeys(self, self.push, self._space_talks)
        app = QApplication.instance()
        assert app is not None, "create the QApplication first"
        self._app = app
        app.installEventFilter(self._keys)
        self._restore()
        self._unsubscribe = session.subscribe(self._on_event)
        self._closing = False
        self._may_close = False
        self.come_forward = ComeForward(self._brought_forward, self)
        self.brought_forward = 0  # how often another window asked this one to come forward

    def _commands(self) -> Commands:
        return Commands(
            new_conversation=self.session.new_conversation,
            past_conversations=self.open_conversations,
            copy_conversation=self.copy_conversation,
            settings=self.open_settings,
            close=self._close,
            quit=self._close,  # one window: quitting is closing it in order
            stop=self.stop,
            toggle_hands_free=self.controls.hands_free.toggle,
            show_trace=self.show_trace,
            zoom=self.zoom,
            shortcut=lambda: self._keys.shortcut.toString(),
        )

    def _lay_out(self) -> None:
        top = QHBoxLayout()
        top.setContentsMargins(16, 12, 16, 0)
        top.addWidget(self.chip)
        top.addWidget(self.stop_button)
        top.addWidget(self.notice)
        top.addStretch(1)
        top.addWidget(self.model_label)
        top.addWidget(self.trace_toggle)
        top.addWidget(self.settings_button)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.transcript)
        split.addWidget(self.trace_panel)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setSizes([640, 420])
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
        c = self.controls
        order = [self.transcript, c.talk, c.hands_free, c.message, c.send_button, self.stop_button]
        order += [self.trace_toggle, self.settings_button, self.trace_panel.tree]
        for first, second in itertools.pairwise(order):
            QWidget.setTabOrder(first, second)
        for button in (self.stop_button, self.trace_toggle, self.settings_button, c.send_button):
            button.setAutoDefault(True)  # Enter presses the focused button, as Space does
        c.talk.setFocus()

    def _restore(self) -> None:
        remembered = self.remembered
        self.remembered.restore(self)
        self.trace_toggle.setChecked(remembered.trace_shown)
        self.show_trace(remembered.trace_shown)
        self._zoom = remembered.zoom
        self._apply_zoom()
        self.set_talk_shortcut(remembered.shortcut)

    def start_hands_free(self, *, asked: bool, configured: bool) -> None:
        """Listen hands-free from the start when asked (--hands-free, a scenario), else as the person last left it
        (window.ini), else as the settings file says; never for the simulated voice (it has no microphone)."""
        if not self.session.voice.simulated and self.remembered.hands_free_at_start(asked=asked, configured=configured):
            self.session.set_hands_free(True)

    def _hands_free_chosen(self, _on: bool) -> None:
        """The person ticked or cleared Hands-free: kept for the next start, as it turned out (a microphone that
        cannot listen leaves it off)."""
        self.remembered.remember(hands_free=self.session.hands_free)

    def _space_talks(self, widget: QWidget) -> bool:
        """Space talks where it has nothing else to do: the conversation and the Talk button."""
        return widget is self.controls.talk or widget is self.transcript or self.transcript.isAncestorOf(widget)

    def set_talk_shortcut(self, text: str) -> None:
        self._keys.set_shortcut(text)
        self.controls.show_shortcut(self._keys.shortcut.toString())

    def _on_event(self, event: Any) -> None:
        for view in (self.transcript_model, self.trace, self.chip, self.banners, self.controls):
            view.handle(event)
        if isinstance(event, StateChanged):
            self.stop_button.setEnabled(event.turn is not None)
            self._follow_reading() if event.turn is not None else None
            self._reading.start() if event.turn is not None else self._reading.stop()
        elif isinstance(event, HandsFreeChanged):
            simulated = self.session.voice.simulated
            self.transcript.welcome.setText(welcome_for(simulated=simulated, hands_free=event.on))
        elif isinstance(event, ConversationOpened):
            self._opened(event)
        elif isinstance(event, EngineOpened):
            self.model_label.setText(f"Model: {event.label}")
            self.come_forward.watch(self.session.journal_path)
        elif isinstance(event, EngineClosed):
            self.model_label.setText(f"Not running: {event.why}" if event.why else "No language model running")
        elif isinstance(event, ConversationBusy):
            ask(busy_question(event), lambda choice: self._busy_chosen(choice, event), self)

    def _opened(self, event: ConversationOpened) -> None:
        self.trace.reset()
        self.trace.load(event.events)  # a conversation read back shows its turns' figures too
        self.transcript_model.load(bubbles_of(event.events))
        self.model_label.setToolTip(f"This conversation's journal: {event.path}")

    def _busy_chosen(self, choice: str, event: ConversationBusy) -> None:
        """Show the window that has the conversation (this one then closes), or start a new one here."""
        if choice != FOCUS:
            self.session.new_conversation()
            return

        def answered(taken: bool) -> None:
            if taken:
                self.close()
            else:
                self.session.raise_problem(not_forward(event.path))

        ask_to_come_forward(event.path, answered, self)

    def _brought_forward(self) -> None:
        self.brought_forward += 1
        if self.isMinimized():
            self.showNormal()
        self.raise_()
        self.activateWindow()

    def _follow_reading(self) -> None:
        """Move each reply being spoken to the heard cursor (a few times a second, only while a turn is live)."""
        for bubble in self.transcript_model.speaking():
            heard = self.session.reading(bubble.turn, bubble.step, bubble.attempt)
            if heard is not None:
                self.transcript_model.reading(bubble.turn, bubble.step, heard)

    # Commands

    def stop(self) -> None:
        """Esc: leave the text box (Space talks again) and stop Parley."""
        if self.controls.message.hasFocus():
            self.transcript.setFocus()
        self.session.stop()

    def show_trace(self, shown: bool) -> None:
        self.trace_panel.setVisible(shown)
        self.trace_toggle.setText("Hide trace" if shown else "Show trace")
        for control in (self.trace_toggle, self.menu.actions["trace"]):
            if control.isChecked() != shown:
                control.setChecked(shown)

    def zoom(self, step: int) -> None:
        self._zoom = next_zoom(self._zoom, step)
        self.remembered.remember(zoom=self._zoom)
        self._apply_zoom()

    def _apply_zoom(self) -> None:
        wanted = "" if self._zoom == 1.0 else sheet(self._zoom)
        if wanted != self.styleSheet():
            self.setStyleSheet(wanted)
        self.transcript.refit()

    def copy_conversation(self) -> None:
        """Ctrl+Shift+C: the conversation as text on the clipboard, and a word that it is there."""
        text = plain_text(self.transcript_model.bubbles)
        if not text:
            self.show_notice("Nothing to copy yet")
            return
        QApplication.clipboard().setText(text)
        self.show_notice("Copied the conversation")

    def show_notice(self, text: str) -> None:
        """A confirmation beside the chip for a moment (the chip itself keeps saying what Parley does)."""
        self.notice.setText(text)
        self.notice.show()
        self._notice_timer.start()

    def open_conversations(self) -> None:
        running = self.session.journal_path if self.session.conversation is not None else None  # else: reopen it
        dialog = ConversationsDialog(self.session.journal_dir, running, self.session.continue_conversation, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()

    def open_settings(self) -> None:
        if self.settings_dialog is not None:
            self.settings_dialog.raise_()
            return
        session = self.session
        dialog = SettingsDialog(
            session.config, self._config_path, session.keys, self._devices(), self, tester=session.try_connection
        )
        dialog.saved.connect(self._settings_saved)
        dialog.finished.connect(self._settings_closed)
        dialog.models_button.clicked.connect(self.open_models)
        self.settings_dialog = dialog
        dialog.open()

    def open_models(self) -> None:
        """Settings → Models: the catalogue, downloads and the model in use (one dialog at a time)."""
        if self.models_dialog is not None:
            self.models_dialog.raise_()
            return
        if self._shelf is None:
            from desktop.catalog.entries import load_catalogue
            from desktop.catalog.store import Store, models_dir

            self._shelf = Shelf(load_catalogue(), Store(models_dir()), self.session.start_work)
        dialog = ModelsDialog(self._shelf, self.session.config, self._config_path, self)
        dialog.used.connect(self.session.apply_settings)
        dialog.finished.connect(self._models_closed)
        self.models_dialog = dialog
        dialog.open()

    def _models_closed(self) -> None:
        if self.models_dialog is not None:
            self.models_dialog.deleteLater()
            self.models_dialog = None

    def _settings_saved(self, config: Config, key_stored: bool, key_problem: str) -> None:
        """Apply what applies live; say where a key that could not be stored can go; offer a restart when what
        takes effect only then differs from what runs (not from what was saved last: put back, nothing changes)."""
        later = restart_needed(self.session.started_with, config)
        self.session.apply_settings(config, key_changed=key_stored)
        if key_problem:
            self.session.raise_problem(key_not_stored(key_problem))
        if later:
            self.offer_restart(later)

    def offer_restart(self, settings: list[str]) -> None:
        box = QMessageBox(self)
        box.setObjectName("restart")
        box.setWindowTitle("Restart Parley?")
        box.setText(restart_question(settings))
        box.addButton("Restart now", QMessageBox.ButtonRole.AcceptRole).clicked.connect(self.restart)
        box.addButton("Later", QMessageBox.ButtonRole.RejectRole)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def _settings_closed(self) -> None:
        if self.settings_dialog is not None:
            self.settings_dialog.deleteLater()
            self.settings_dialog = None

    def _close(self) -> None:
        self.close()

    def restart(self) -> None:
        """Close in order and open again (run_app does): for settings that the voice reads once, at start."""
        self.restart_requested = True
        self.close()

    # Closing

    async def shutdown(self) -> None:
        """Dispose the conversation and wait until it is quiescent; then the window may close."""
        if self._may_close:
            return
        if self.settings_dialog is not None:
            self.settings_dialog.reject()
        if self._shelf is not None:
            self._shelf.cancel()  # a download under way stops and keeps nothing
        if self.models_dialog is not None:
            self.models_dialog.reject()
        await self.session.aclose()
        self._detach()

    def _detach(self) -> None:
        if self._may_close:
            return
        self._unsubscribe()
        self.come_forward.stop()
        self.chip.stop()
        self.push.stop()
        self._reading.stop()
        self._notice_timer.stop()
        self._app.removeEventFilter(self._keys)
        self.remembered.save(self, trace_shown=self.trace_panel.isVisibleTo(self))
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
