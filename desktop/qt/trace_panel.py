"""The trace panel: one entry per turn with its attempts, retries and timings."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from desktop.model.trace_model import TraceBook, TurnTrace
from desktop.qt.style import named

FOOTNOTE = "Hover a line for what it measures; stop_ms and ttfa_ms come from the audio itself (Ctrl+T hides this)."


class TracePanel(QWidget):
    def __init__(self, book: TraceBook, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(named(QLabel("Trace (per turn)"), "panelTitle"))
        self.tree = named(QTreeWidget(), "trace")
        self.tree.setHeaderHidden(True)
        self.tree.setRootIsDecorated(True)
        layout.addWidget(self.tree, 1)
        footnote = named(QLabel(FOOTNOTE), "hint")
        footnote.setWordWrap(True)
        layout.addWidget(footnote)
        self._items: dict[int, QTreeWidgetItem] = {}
        book.on_change(self._changed)
        book.on_reset(self._reset)

    def _reset(self) -> None:
        self.tree.clear()
        self._items.clear()

    def _changed(self, trace: TurnTrace) -> None:
        item = self._items.get(trace.turn)
        if item is None:
            item = self._items[trace.turn] = QTreeWidgetItem(self.tree)
        item.setText(0, trace.title())
        item.takeChildren()
        for line, explanation in trace.lines():
            QTreeWidgetItem(item, [line]).setToolTip(0, explanation)
        item.setExpanded(True)
        self.tree.scrollToItem(item)
