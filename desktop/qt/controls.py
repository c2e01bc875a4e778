"""Talking and typing: the hold-to-talk button, hands-free toggle, mic level meter, text box (keys: talk_keys)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.model.facts import HandsFreeChanged, MicLevel, TalkChanged
from desktop.model.session import Session
from desktop.qt.style import named
from desktop.qt.talk_keys import PushToTalk

TALK_HELD = "Release to send"


def talk_label(shortcut: str) -> str:
    return f"Hold to talk  ({shortcut})"


class TalkButton(QPushButton):
    """As wide as its longest label (idle or held), so it never changes width nor cuts its text in a small window."""

    def __init__(self) -> None:
        super().__init__()
        self.labels: tuple[str, ...] = (TALK_HELD,)

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        metrics = self.fontMetrics()
        widest = max(metrics.horizontalAdvance(label) for label in (*self.labels, self.text()))
        return QSize(hint.width() + widest - metrics.horizontalAdvance(self.text()), hint.height())

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()


class Controls(QWidget):
    def __init__(self, session: Session, push: PushToTalk, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._session = session
        self.talk = named(TalkButton(), "talk")
        self.talk.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.talk.pressed.connect(push.press)
        self.talk.released.connect(push.release)
        self.show_shortcut("Ctrl+Space")
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
        self.send_button.setObjectName("send")
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

    def resizeEvent(self, event: QResizeEvent) -> None:
        """The hint wraps onto more lines as the window narrows: ask for the height that takes, so a small window
        gives up conversation space rather than squeezing the Talk button and the hands-free box."""
        super().resizeEvent(event)
        layout = self.layout()
        needed = layout.totalHeightForWidth(self.width()) if layout is not None else -1
        if needed > 0 and needed != self.minimumHeight():
            self.setMinimumHeight(needed)

    def show_shortcut(self, shortcut: str) -> None:
        self._idle = talk_label(shortcut)
        self.talk.labels = (self._idle, TALK_HELD)
        self.talk.updateGeometry()
        if not self._session.talking:
            self.talk.setText(self._idle)
        self.talk.setToolTip(
            f"Hold while you speak (or hold Space while this button or the conversation has focus, or {shortcut} "
            "anywhere in the window); holding it while Parley speaks stops Parley at once"
        )

    def send(self) -> None:
        if self._session.send_text(self.message.text()):
            self.message.clear()

    def handle(self, event: Any) -> None:
        if isinstance(event, TalkChanged):
            self.talk.setDown(event.held)
            self.talk.setText(TALK_HELD if event.held else self._idle)
        elif isinstance(event, HandsFreeChanged) and self.hands_free.isChecked() != event.on:
            self.hands_free.blockSignals(True)
            self.hands_free.setChecked(event.on)
            self.hands_free.blockSignals(False)
        elif isinstance(event, MicLevel):
            self.level.setValue(round(event.level * 100))
