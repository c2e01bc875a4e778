"""The transcript view: one bubble per message; heard words in ink, the unheard rest struck through and grey.

While a reply is spoken, its bubble follows the heard cursor: the words heard so far in ink, the rest grey.
"""

from __future__ import annotations

import datetime as dt
from html import escape

from PySide6.QtCore import Qt
from PySide6.QtGui import QFocusEvent, QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from desktop.model.transcript_model import Bubble, TranscriptModel, unheard_rest
from desktop.qt.style import INK, UNHEARD, named

INTERRUPTED = "Interrupted: the struck-through words were never heard, and Parley does not remember them"
WELCOME = (
    "Hold the button below and talk (or hold Space while the conversation has focus), or type a message.\n"
    "Hold Talk while Parley speaks to stop it at once; it remembers only what you heard."
)
WELCOME_HANDS_FREE = (
    "Parley is listening: just talk, or type a message.\n"
    "Talk over Parley at any time: it stops at once and remembers only what you heard."
)
WELCOME_SIMULATED = (
    "Type a message below to start.\n"
    "No microphone is in use, so replies are spoken silently; hold Talk (or Space) while Parley speaks "
    "to interrupt it, and see that it remembers only the words you had heard."
)
WIDEST = 0.72  # of the transcript's width
MARGINS = 14 + 14 + 4


def welcome_for(*, simulated: bool, hands_free: bool) -> str:
    """The empty window's hint for the way Parley listens now: only hands-free stops on the voice alone."""
    if simulated:
        return WELCOME_SIMULATED
    return WELCOME_HANDS_FREE if hands_free else WELCOME


def bubble_plain(bubble: Bubble) -> str:
    if bubble.role == "user" or bubble.heard is None:
        return bubble.text
    return " ".join(part for part in (bubble.heard, bubble.unheard) if part)


def bubble_html(bubble: Bubble) -> str:
    """Rich text for a bubble: while spoken, heard words in ink and the rest grey; once settled the unheard
    part is struck through."""
    if bubble.role == "assistant" and bubble.heard is None and bubble.reading is not None:
        return _reading_html(bubble.text, bubble.reading)
    if bubble.role == "user" or bubble.heard is None:
        return f'<span style="color:{INK}">{escape(bubble.text)}</span>'
    parts = []
    if bubble.heard:
        parts.append(f'<span style="color:{INK}">{escape(bubble.heard)}</span>')
    if bubble.unheard:
        struck = f"color:{UNHEARD}; text-decoration: line-through"
        parts.append(f'<span style="{struck}">{escape(bubble.unheard)}</span>')
    return " ".join(parts)


def _reading_html(text: str, heard: str) -> str:
    rest = unheard_rest(text, heard)
    parts = [f'<span style="color:{INK}">{escape(heard)}</span>'] if heard else []
    if rest:
        parts.append(f'<span style="color:{UNHEARD}">{escape(rest)}</span>')
    return " ".join(parts)


def when(bubble: Bubble) -> str:
    """The hover text: when it was said (date too, when not today)."""
    if not bubble.at:
        return ""
    moment = dt.datetime.fromtimestamp(bubble.at)
    shown = moment.strftime("%H:%M:%S") if moment.date() == dt.date.today() else moment.strftime("%d %b %Y, %H:%M")
    return f"{'You said this' if bubble.role == 'user' else 'Parley said this'} at {shown}"


class BubbleWidget(QFrame):
    def __init__(self, bubble: Bubble, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bubble = bubble
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 8, 14, 10)
        layout.setSpacing(3)
        self.who = named(QLabel(self._who()), "who")
        self.body = named(QLabel(), "body")
        self.body.setTextFormat(Qt.TextFormat.RichText)
        self.body.setWordWrap(True)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.marker = named(QLabel(INTERRUPTED), "interrupted")
        self.marker.setWordWrap(True)
        self.note = named(QLabel(), "note")
        self.note.setWordWrap(True)
        for widget in (self.who, self.body, self.marker, self.note):
            layout.addWidget(widget)
        self.widest = 600
        self.refresh()

    def fit(self, widest: int) -> None:
        """As wide as the text needs, up to `widest`: short messages get small bubbles."""
        self.widest = widest
        lines = bubble_plain(self.bubble).splitlines() or [""]
        natural = max(self.body.fontMetrics().horizontalAdvance(line) for line in lines)
        labels = max(self.who.sizeHint().width(), self.note.fontMetrics().horizontalAdvance(self.bubble.note))
        if self.marker.isVisibleTo(self):
            labels = widest
        self.setFixedWidth(max(160, min(max(natural, labels) + MARGINS, widest)))

    def _who(self) -> str:
        if self.bubble.role == "user":
            return "You (spoken)" if self.bubble.source == "voice" else "You (typed)"
        return "Parley" if self.bubble.step <= 1 else f"Parley (step {self.bubble.step})"

    def refresh(self) -> None:
        bubble = self.bubble
        html = bubble_html(bubble)
        self.body.setText(html)
        self.body.setVisible(bool(bubble.text or bubble.heard or bubble.unheard))
        self.marker.setVisible(bubble.interrupted and bool(bubble.unheard))
        self.note.setText(bubble.note)
        self.note.setVisible(bool(bubble.note))
        self.setToolTip(when(bubble))
        self.fit(self.widest)
        if bubble.withdrawn:
            self.hide()
        name = "bubble_failed" if bubble.failed else f"bubble_{bubble.role}"
        if self.objectName() != name:
            self.setObjectName(name)
            self.style().unpolish(self)
            self.style().polish(self)


class TranscriptView(QScrollArea):
    """Renders a TranscriptModel; keeps the newest message in view unless the person scrolled up."""

    def __init__(self, model: TranscriptModel, welcome: str = WELCOME, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("transcript")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body = self.body = named(QWidget(), "transcriptBody")
        self._column = QVBoxLayout(body)
        self._column.setContentsMargins(16, 16, 16, 16)
        self._column.setSpacing(10)
        self.welcome = named(QLabel(welcome), "welcome")
        self.welcome.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.welcome.setWordWrap(True)
        self._column.addWidget(self.welcome)
        self._column.addStretch(1)
        self.setWidget(body)
        self.widgets: dict[int, BubbleWidget] = {}
        self._follow = True
        bar = self.verticalScrollBar()
        bar.rangeChanged.connect(self._keep_bottom)
        bar.valueChanged.connect(lambda value: setattr(self, "_follow", value >= bar.maximum() - 4))
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAccessibleName("Conversation")
        model.on_change(self._changed)
        model.on_reset(self._reset)

    def bubble_widget(self, bubble: Bubble) -> BubbleWidget:
        return self.widgets[id(bubble)]

    def _changed(self, bubble: Bubble, new: bool) -> None:
        if new:
            self._append(bubble)
        else:
            self.widgets[id(bubble)].refresh()

    def _reset(self) -> None:
        """Another conversation: every bubble goes; the welcome shows until one comes in."""
        while self._column.count() > 2:  # the welcome and the closing stretch stay
            item = self._column.takeAt(1)
            row = item.layout() if item is not None else None
            while row is not None and row.count():
                child = row.takeAt(0)
                widget = child.widget() if child is not None else None
                if widget is not None:
                    widget.hide()
                    widget.deleteLater()
        self.widgets.clear()
        self.welcome.show()
        self._follow = True

    def refit(self) -> None:
        """After a font change (zoom): bubbles fit their text again."""
        for widget in self.widgets.values():
            widget.fit(self._widest())

    def _append(self, bubble: Bubble) -> None:
        self.welcome.hide()
        widget = BubbleWidget(bubble)
        widget.fit(self._widest())
        row = QHBoxLayout()
        if bubble.role == "user":
            row.addStretch(1)
        row.addWidget(widget)
        if bubble.role != "user":
            row.addStretch(1)
        self._column.insertLayout(self._column.count() - 1, row)
        self.widgets[id(bubble)] = widget

    def _widest(self) -> int:
        return int(self.viewport().width() * WIDEST)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        for widget in self.widgets.values():
            widget.fit(self._widest())

    def focusInEvent(self, event: QFocusEvent) -> None:
        super().focusInEvent(event)
        self._show_focus(True)

    def focusOutEvent(self, event: QFocusEvent) -> None:
        super().focusOutEvent(event)
        self._show_focus(False)

    def _show_focus(self, focused: bool) -> None:
        """A scroll area's frame is not repainted on focus by the style sheet alone: a property is."""
        for widget in (self, self.body):
            widget.setProperty("focused", focused)
            widget.style().unpolish(widget)
            widget.style().polish(widget)
            widget.update()

    def _keep_bottom(self, _low: int, high: int) -> None:
        if self._follow:
            self.verticalScrollBar().setValue(high)
