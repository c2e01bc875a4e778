"""The Settings dialog's field widgets: a path with a file picker, a device list, speech detection in words."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSlider, QWidget

from desktop.model.device_lists import DeviceLists
from desktop.qt.style import named

DEFAULT_DEVICE = "System default"
STEP = 0.05  # speech detection moves in steps of this much probability

Picker = Callable[[QWidget, str, str], str]  # (parent, caption, filter or "" for a folder) -> chosen path or ""


def pick_with_qt(parent: QWidget, caption: str, name_filter: str) -> str:
    if not name_filter:
        return QFileDialog.getExistingDirectory(parent, caption)
    chosen, _ = QFileDialog.getOpenFileName(parent, caption, "", name_filter)
    return chosen


class PathField(QWidget):
    """A path typed or picked ("Browse…"); empty means the bundled default, which the placeholder names."""

    def __init__(self, value: str, default: str, caption: str, name_filter: str, pick: Picker) -> None:
        super().__init__()
        self.edit = QLineEdit(value)
        self.edit.setPlaceholderText(f"empty: {default}")
        self.browse = QPushButton("Browse…")
        self.browse.setAccessibleName(f"Browse for the {caption.lower()}")
        self.browse.clicked.connect(lambda: self._pick(pick, caption, name_filter))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.edit, 1)
        row.addWidget(self.browse)
        self.setFocusProxy(self.edit)

    def text(self) -> str:
        return self.edit.text().strip()

    def setText(self, value: str) -> None:
        self.edit.setText(value)

    def _pick(self, pick: Picker, caption: str, name_filter: str) -> None:
        chosen = pick(self, caption, name_filter)
        if chosen:
            self.edit.setText(chosen)


class SpeechDetection(QWidget):
    """The VAD threshold as a slider between two plain ends; the number is in the tooltip. A threshold between two
    steps stays exact until the slider is moved (saving must not change, and ask a restart for, what was not)."""

    def __init__(self, threshold: float) -> None:
        super().__init__()
        self._exact = threshold
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(1, 19)
        self.slider.setValue(round(threshold / STEP))
        self.slider.setAccessibleName("Speech detection")
        self.slider.valueChanged.connect(self._explain)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(named(QLabel("Hears quiet speech"), "hint"))
        row.addWidget(self.slider, 1)
        row.addWidget(named(QLabel("Ignores more noise"), "hint"))
        self.setFocusProxy(self.slider)
        self._explain()

    def threshold(self) -> float:
        if self.slider.value() == round(self._exact / STEP):
            return self._exact
        return round(self.slider.value() * STEP, 2)

    def set_threshold(self, value: float) -> None:
        self._exact = value
        self.slider.setValue(round(value / STEP))
        self._explain()

    def _explain(self) -> None:
        self.slider.setToolTip(
            f"How sure Parley must be that someone is speaking: {self.threshold():.2f} "
            "(lower hears quieter voices and more noise)"
        )


def device_box(devices: DeviceLists, kind: str, current: str) -> QComboBox:
    """The devices of `kind` ("input" or "output") by the names a person reads; the current one stays a choice."""
    box = QComboBox()
    box.addItem(DEFAULT_DEVICE, "")
    for setting in devices.inputs if kind == "input" else devices.outputs:
        box.addItem(devices.label(setting), setting)
    if current and box.findData(current) < 0:
        box.addItem(devices.label(current) + ("" if devices.present(current) else " (not found now)"), current)
    box.setCurrentIndex(max(0, box.findData(current)))
    return box


def device(box: QComboBox) -> str:
    return str(box.currentData() or "")
