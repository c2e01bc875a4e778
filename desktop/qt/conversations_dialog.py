"""Past conversations: pick one to read (read-only, nothing is written to it) and, if you like, continue it."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from desktop.model.conversations import ConversationInfo, bubbles_of, list_conversations, when_used
from desktop.model.transcript_model import TranscriptModel
from desktop.qt.fit import fit_dialog
from desktop.qt.style import named
from desktop.qt.transcript import TranscriptView
from engine.journal import JournalCorrupt, read_events

PREFERRED = QSize(900, 560)
NONE_YET = "No past conversations yet."
PICK = "Pick a conversation on the left to read it here."


class ConversationsDialog(QDialog):
    """`continue_with(path)` is called when the person chooses to go on with a conversation; `current` is the one
    running in the window (None when none runs: the one shown stopped, and may be opened again)."""

    def __init__(
        self,
        journal_dir: Path,
        current: Path | None,
        continue_with: Callable[[Path], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Past conversations")
        self._current, self._continue_with = current, continue_with
        self.list = QListWidget()
        self.list.setAccessibleName("Past conversations")
        self.list.setWordWrap(True)  # a long title wraps inside the list: never cut, never scrolled sideways
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setResizeMode(QListView.ResizeMode.Adjust)
        self.preview_model = TranscriptModel()
        self.preview = TranscriptView(self.preview_model, PICK)
        self.status = named(QLabel(), "hint")
        self.status.setWordWrap(True)
        self.continue_button = QPushButton("Continue this conversation")
        self.continue_button.setEnabled(False)
        self.continue_button.clicked.connect(self._continue)
        self._lay_out()
        self._fill(list_conversations(journal_dir))
        self.list.currentItemChanged.connect(self._show)
        self.list.itemActivated.connect(lambda _item: self._continue())
        if self.list.count():
            self.list.setCurrentRow(0)
        fit_dialog(self, PREFERRED)

    def _lay_out(self) -> None:
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.list)
        split.addWidget(self.preview)
        split.setSizes([300, 600])
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.continue_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        row = QHBoxLayout()
        row.addWidget(self.status, 1)
        row.addWidget(buttons)
        column = QVBoxLayout(self)
        column.addWidget(split, 1)
        column.addLayout(row)

    def _fill(self, found: list[ConversationInfo]) -> None:
        now = time.time()
        for info in found:
            item = QListWidgetItem(_label(info, info.path == self._current, now))
            item.setData(Qt.ItemDataRole.UserRole, info)
            item.setToolTip(_tip(info))
            self.list.addItem(item)
        if not found:
            self.status.setText(NONE_YET)

    def selected(self) -> ConversationInfo | None:
        item = self.list.currentItem()
        info = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        return info if isinstance(info, ConversationInfo) else None

    def _show(self) -> None:
        info = self.selected()
        if info is None:
            return
        try:
            events = read_events(info.path)
        except (JournalCorrupt, OSError, UnicodeDecodeError) as error:
            self.preview_model.load([])
            self.status.setText(f"This conversation cannot be read: {error}")
            self.continue_button.setEnabled(False)
            return
        self.preview_model.load(bubbles_of(events))
        current = info.path == self._current
        self.status.setText("This is the conversation in the window." if current else "Read-only: nothing changes.")
        self.continue_button.setEnabled(not current)

    def _continue(self) -> None:
        info = self.selected()
        if info is None or not info.readable or info.path == self._current:
            return
        self._continue_with(info.path)
        self.accept()


def _label(info: ConversationInfo, current: bool, now: float) -> str:
    """Labelled with when it was last used, as the list is ordered (newest first)."""
    turns = f"{info.turns} turn{'s' if info.turns != 1 else ''}"
    return f"{when_used(info.last_used, now)}{'  (open now)' if current else ''}\n{info.title}  ·  {turns}"


def _tip(info: ConversationInfo) -> str:
    """The whole first message, and when the conversation started and was last used."""
    started = dt.datetime.fromtimestamp(info.started).strftime("%a %d %b %Y, %H:%M")
    used = dt.datetime.fromtimestamp(info.last_used).strftime("%a %d %b %Y, %H:%M")
    return f"{info.first or info.title}\n\nStarted {started}; last used {used}\n{info.path}"
