"""Settings → Models: the recommended models with their cost (download, RAM), the speed to expect here and their
licence; Download (with progress and a cancel) and Use. A model chosen is saved to the settings file and applies
from the next turn; nothing downloads unless the person clicks."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.config import Config
from desktop.errors import BadInput
from desktop.model.model_shelf import Shelf, ShelfRow
from desktop.model.settings_io import SettingsError, save
from desktop.qt.style import named

COLUMNS = ("Model", "Kind", "Download", "RAM", "Speed here", "Licence", "Here")
ID_ROLE = Qt.ItemDataRole.UserRole


class ModelsDialog(QDialog):
    used = Signal(object)  # the new Config, already written to the settings file

    def __init__(self, shelf: Shelf, config: Config, path: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Models")
        self.shelf, self.config, self._path = shelf, config, path
        self.models = QTreeWidget()
        self.models.setHeaderLabels(list(COLUMNS))
        self.models.setRootIsDecorated(False)
        self.models.currentItemChanged.connect(lambda *_: self._buttons())
        self.download_button = QPushButton("Download")
        self.download_button.clicked.connect(self.download)
        self.use_button = QPushButton("Use")
        self.use_button.clicked.connect(self.use)
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.clicked.connect(shelf.cancel)
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.status = named(QLabel(), "hint")
        self.status.setWordWrap(True)
        self._lay_out()
        self._unsubscribe = shelf.subscribe(self.refresh)
        self.finished.connect(lambda _: self._unsubscribe())
        self.refresh()

    def _lay_out(self) -> None:
        buttons = QHBoxLayout()
        for button in (self.download_button, self.use_button, self.cancel_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        close = QPushButton("Close")
        close.clicked.connect(self.reject)
        buttons.addWidget(close)
        column = QVBoxLayout(self)
        column.addWidget(self.models, 1)
        column.addWidget(self.progress)
        column.addWidget(self.status)
        column.addLayout(buttons)
        self.resize(860, 480)

    def select(self, model_id: str) -> None:
        for i in range(self.models.topLevelItemCount()):
            item = self.models.topLevelItem(i)
            if item is not None and item.data(0, ID_ROLE) == model_id:
                self.models.setCurrentItem(item)

    @property
    def selected(self) -> str | None:
        item = self.models.currentItem()
        return None if item is None else str(item.data(0, ID_ROLE))

    def refresh(self) -> None:
        """Rows, progress and the last outcome as the shelf has them now (the selection is kept)."""
        chosen = self.selected
        self.models.clear()
        for row in self.shelf.rows(self.config):
            self.models.addTopLevelItem(_item(row))
        if chosen is not None:
            self.select(chosen)
        fetching = self.shelf.fetching
        self.progress.setVisible(fetching is not None)
        if fetching is not None:
            self.progress.setValue(fetching.percent)
            self.progress.setFormat(f"{fetching.id}: {fetching.phase} %p%")
        self.status.setText(("✗ " if self.shelf.failed and self.shelf.message else "") + self.shelf.message)
        self._buttons()

    def _buttons(self) -> None:
        row = next((r for r in self.shelf.rows(self.config) if r.id == self.selected), None)
        busy = self.shelf.fetching is not None
        self.download_button.setEnabled(row is not None and not row.state and not busy)
        self.use_button.setEnabled(row is not None and bool(row.state) and not row.in_use)
        self.cancel_button.setEnabled(busy)

    def download(self) -> None:
        if self.selected is not None:
            self.shelf.get(self.selected)

    def use(self) -> None:
        """Save the settings with the selected model and hand them to the window (they apply at the next turn)."""
        if self.selected is None:
            return
        try:
            config = self.shelf.use(self.selected, self.config)
            save(config, self._path)
        except (BadInput, SettingsError) as error:
            self.status.setText(f"✗ {error}")
            return
        self.config = config
        self.used.emit(config)
        self.refresh()
        self.status.setText(f"{self.selected} is in use from the next turn")


def _item(row: ShelfRow) -> QTreeWidgetItem:
    here = "bundled" if row.state == "bundled" else "yes" if row.state else ""
    mark = " (in use)" if row.in_use else ""
    item = QTreeWidgetItem([f"{row.id}{mark}", row.kind, row.size, row.ram, row.speed, row.licence, here])
    item.setData(0, ID_ROLE, row.id)
    item.setToolTip(0, row.name)
    return item
