"""Dialogs that fit the screen whatever its size and scaling (1280x800 at 150 % is 853x533 logical pixels): never
larger than the available screen, their content scrolling inside instead, and their buttons always in reach."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

SCREEN_SHARE = 0.9  # a window opens on at most this much of the available screen


class Scroller(QScrollArea):
    """A scroll area that asks for its content's whole size (QScrollArea caps its own hint at 36x24 lines), so a
    dialog is as large as its content where the screen allows, and scrolls where it does not."""

    def __init__(self, content: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidget(content)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)

    def sizeHint(self) -> QSize:
        content = self.widget()
        hint = content.sizeHint() if content is not None else QSize(0, 0)
        frame = 2 * self.frameWidth()
        return QSize(hint.width() + self.verticalScrollBar().sizeHint().width() + frame, hint.height() + frame)


def available(widget: QWidget) -> QRect:
    """The available geometry of the screen `widget` is (or will be) on."""
    screen = widget.screen() or QGuiApplication.primaryScreen()
    return screen.availableGeometry()


def most(widget: QWidget) -> QSize:
    room = available(widget)
    return QSize(int(room.width() * SCREEN_SHARE), int(room.height() * SCREEN_SHARE))


def fit_dialog(dialog: QWidget, wanted: QSize | None = None) -> None:
    """Size `dialog` to `wanted` (else its size hint, styled), within the share of the screen it may take."""
    dialog.ensurePolished()
    bound = most(dialog)
    size = (wanted or dialog.sizeHint()).boundedTo(bound)
    dialog.resize(size.expandedTo(dialog.minimumSizeHint().boundedTo(bound)))
