"""Help and About: rich text in a dialog that scrolls when the screen is too small for it (a message box cannot)."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from desktop.qt.fit import fit_dialog

TEXT_EMS = 38  # a comfortable line length, in widths of "M"


class TextDialog(QDialog):
    def __init__(self, title: str, html: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setObjectName(name)
        self.text = QTextBrowser()
        self.text.setOpenExternalLinks(True)
        self.text.setHtml(html)
        self.text.setFrameShape(QTextBrowser.Shape.NoFrame)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        self._column = column = QVBoxLayout(self)
        column.addWidget(self.text, 1)
        column.addWidget(buttons)
        self.ensurePolished()
        fit_dialog(self, self._wanted(buttons.sizeHint().height()))

    def _wanted(self, buttons: int) -> QSize:
        """The whole text at a readable line length, with the buttons and margins around it."""
        document = self.text.document()
        document.setTextWidth(TEXT_EMS * self.text.fontMetrics().horizontalAdvance("M"))
        size = document.size().toSize()
        margins = self._column.contentsMargins()
        width = size.width() + margins.left() + margins.right() + self.text.verticalScrollBar().sizeHint().width()
        height = size.height() + buttons + self._column.spacing() + margins.top() + margins.bottom() + 8
        return QSize(width, height)
