"""Talking and typing: the hold-to-talk button (and Space), hands-free toggle, mic level meter, text box."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from desktop.model.facts import HandsFreeChanged, MicLevel, TalkChanged
from desktop.model.session import Session
from desktop.qt.style import named

TALK_IDLE = "Hold to talk  (Space)"
TALK_HELD = "Release to send"
TEXT_ENTRY = (QLineEdit, QTextEdit, QPlainTextEdit, QAbstractSpinBox)


class Controls(QWidget):
    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._session = session
        self.talk = named(QPushButton(TALK_IDLE), "talk")
        self.talk.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.talk.setToolTip("Hold while you speak; speaking over Parley stops it at once")
        self.talk.pressed.connect(session.press_to_talk)
        self.talk.released.connect(session.release_to_talk)
        self.hands_free = QCheckBox("Hands-free")
        self.hands_free.setToolTip("Listen all the time and notice when you start speaking")
        self.hands_free.toggled.connect(session.set_hands_free)
        self.level = named(QProgressBar(), "level")
        self.level.setRange(0, 100)
        self.level.setTextVisible(False)
        self.level.setFixedWidth(120)
        self.message = named(QLineEdit(), "message")
        self.message.setPlaceholderText("Or type a message and press Enter…")
        self.message.returnPressed.connect(self.send)
        self.send_button = QPushButton("Send")
        self.send_button.clicked.connect(self.send)
        self.hint = named(QLabel(session.voice.description), "hint")
        self.hint.setWordWrap(True)
        self._lay_out()

    def _lay_out(self) -> None:
        voice_row = QHBoxLayout()
        voice_row.addWidget(self.talk)
        side = QGridLayout()
        side.addWidget(self.hands_free, 0, 0, 1, 2)
        side.addWidget(named(QLabel("Mic"), "hint"), 1, 0)
        side.addWidget(self.level, 1, 1)
        voice_row.addSpacing(16)
        voice_row.addLayout(side)
        voice_row.addStretch(1)
        text_row = QHBoxLayout()
        text_row.addWidget(self.message, 1)
        text_row.addWidget(self.send_button)
        column = QVBoxLayout(self)
        column.setContentsMargins(16, 8, 16, 12)
        column.addLayout(voice_row)
        column.addLayout(text_row)
        column.addWidget(self.hint)

    def send(self) -> None:
        if self._session.send_text(self.message.text()):
            self.message.clear()

    def handle(self, event: Any) -> None:
        if isinstance(event, TalkChanged):
            self.talk.setDown(event.held)
            self.talk.setText(TALK_HELD if event.held else TALK_IDLE)
        elif isinstance(event, HandsFreeChanged) and self.hands_free.isChecked() != event.on:
            self.hands_free.blockSignals(True)
            self.hands_free.setChecked(event.on)
            self.hands_free.blockSignals(False)
        elif isinstance(event, MicLevel):
            self.level.setValue(round(event.level * 100))


class SpaceToTalk(QObject):
    """Hold Space anywhere in `window` to talk, except while typing; installed on the application."""

    def __init__(self, window: QWidget, session: Session) -> None:
        super().__init__(window)
        self._window = window
        self._session = session

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind not in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease) or not isinstance(event, QKeyEvent):
            return False
        if event.key() != Qt.Key.Key_Space or not self._applies(watched):
            return False
        if not event.isAutoRepeat():
            if kind == QEvent.Type.KeyPress:
                self._session.press_to_talk()
            else:
                self._session.release_to_talk()
        return True

    def _applies(self, receiver: QObject) -> bool:
        """Key events go to the focused widget: ours, in our window, and not a place to type."""
        if not isinstance(receiver, QWidget) or receiver.window() is not self._window:
            return False
        if isinstance(receiver, TEXT_ENTRY):
            return False
        return not (isinstance(receiver, QComboBox) and receiver.isEditable())
