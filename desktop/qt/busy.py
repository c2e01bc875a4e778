"""The other-window question (desktop.model.busy) as a dialog, and the come-forward request between windows.

A window watches the folder of the conversation it has (QFileSystemWatcher); a window told that this conversation
is held elsewhere puts the request file there and waits, on a timer, for it to be taken. Nothing blocks the loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, Qt, QTimer
from PySide6.QtWidgets import QMessageBox, QWidget

from adapters.runtime.private_files import write_private_text
from desktop.model.busy import ANSWER_WITHIN_S, BusyQuestion, focus_request

POLL_MS = 50


class ComeForward(QObject):
    """Calls `come_forward` when another window asks, through the conversation's folder, for this one."""

    def __init__(self, come_forward: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._come_forward = come_forward
        self._watcher = QFileSystemWatcher(self)
        self._watcher.directoryChanged.connect(lambda _folder: self._check())
        self._journal: Path | None = None

    def watch(self, journal: Path) -> None:
        """Answer for the conversation of `journal` (and no longer for the one before)."""
        if self._watcher.directories():
            self._watcher.removePaths(self._watcher.directories())
        self._journal = journal
        if journal.parent.is_dir():
            self._watcher.addPath(str(journal.parent))
            self._check()

    def stop(self) -> None:
        if self._watcher.directories():
            self._watcher.removePaths(self._watcher.directories())
        self._journal = None

    def _check(self) -> None:
        if self._journal is None:
            return
        request = focus_request(self._journal)
        if request.exists():
            with contextlib.suppress(FileNotFoundError):
                request.unlink()
            self._come_forward()


def ask_to_come_forward(journal: Path, done: Callable[[bool], None], parent: QObject) -> None:
    """Ask the window holding `journal` to come forward; `done(True)` once it took the request, else `done(False)`
    after ANSWER_WITHIN_S (the request is then withdrawn)."""
    request = focus_request(journal)
    try:
        write_private_text(request, "come forward\n")
    except OSError:
        done(False)
        return
    timer = QTimer(parent)
    waited = [0]

    def poll() -> None:
        waited[0] += POLL_MS
        taken = not request.exists()
        if taken or waited[0] >= ANSWER_WITHIN_S * 1000:
            timer.stop()
            timer.deleteLater()
            if not taken:
                with contextlib.suppress(FileNotFoundError):
                    request.unlink()
            done(taken)

    timer.timeout.connect(poll)
    timer.start(POLL_MS)


def ask(question: BusyQuestion, chosen: Callable[[str], None], parent: QWidget) -> QMessageBox:
    """Show the question (window-modal, not blocking the loop); `chosen` gets the choice made."""
    box = QMessageBox(parent)
    box.setObjectName("busy")
    box.setWindowTitle(question.title)
    box.setText(question.text)
    box.setIcon(QMessageBox.Icon.Question)
    for choice, label in question.choices:
        button = box.addButton(label, QMessageBox.ButtonRole.AcceptRole)
        button.clicked.connect(lambda _checked=False, choice=choice: chosen(choice))
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box
