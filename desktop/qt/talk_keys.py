"""Push-to-talk from the keyboard, without taking Space from the control that has focus.

Space talks only while the transcript or the Talk button has focus (elsewhere it does what it always does:
ticks a box, presses a button, types a space); the talk shortcut (Ctrl+Space unless changed) talks from
anywhere in the window, the text box included. Key auto-repeat is not a new press: Qt marks X11's
repeats, but Xvfb, VNC and remote desktops send them as plain release/press pairs, so a release is held back
for REPEAT_MS and a press inside that time continues the same hold.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QWidget

from desktop.model.session import Session

REPEAT_MS = 60  # a release followed by a press within this is key auto-repeat, not a new utterance
DEFAULT_SHORTCUT = "Ctrl+Space"


class PushToTalk(QObject):
    """Press/release for the session, with repeats folded in: a press soon after a release continues the hold.

    `key` is the key holding it down (None for the mouse), so only that key's release ends it.
    """

    def __init__(self, session: Session, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._session = session
        self.key: int | None = None
        self._pending = QTimer(self)
        self._pending.setSingleShot(True)
        self._pending.setInterval(REPEAT_MS)
        self._pending.timeout.connect(self.release_now)

    def press(self, key: int | None = None) -> None:
        if self._pending.isActive():
            self._pending.stop()  # a repeat: the same hold goes on
            return
        self.key = key
        self._session.press_to_talk()

    def release(self) -> None:
        if self._session.talking and not self._pending.isActive():
            self._pending.start()

    def release_now(self) -> None:
        """The hold ends (also when focus left the window with the key down: it will never see the release)."""
        self._pending.stop()
        self.key = None
        self._session.release_to_talk()

    def stop(self) -> None:
        self._pending.stop()


class TalkKeys(QObject):
    """The application-wide key filter for one window: Space where it means talking, and the talk shortcut."""

    def __init__(self, window: QWidget, push: PushToTalk, space_here: Callable[[QWidget], bool]) -> None:
        super().__init__(window)
        self._window = window
        self._push = push
        self._space_here = space_here
        self.shortcut = QKeySequence(DEFAULT_SHORTCUT)

    def set_shortcut(self, text: str) -> None:
        sequence = QKeySequence(text)
        self.shortcut = sequence if sequence.count() == 1 else QKeySequence(DEFAULT_SHORTCUT)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.WindowDeactivate and watched is self._window and self._push.key is not None:
            self._push.release_now()
            return False
        if kind not in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease) or not isinstance(event, QKeyEvent):
            return False
        if not isinstance(watched, QWidget) or watched.window() is not self._window:
            return False
        if kind == QEvent.Type.KeyPress:
            return self._pressed(watched, event)
        return self._released(event)

    def _pressed(self, watched: QWidget, event: QKeyEvent) -> bool:
        held = self._push.key
        if held is not None and event.key() == held:
            if not event.isAutoRepeat():
                self._push.press(held)  # a repeat sent as a plain pair: folded into the hold
            return True
        if not self._starts_talking(watched, event):
            return False
        if not event.isAutoRepeat():
            self._push.press(event.key())
        return True

    def _released(self, event: QKeyEvent) -> bool:
        if self._push.key is None or event.key() != self._push.key:
            return False
        if not event.isAutoRepeat():
            self._push.release()
        return True

    def _starts_talking(self, watched: QWidget, event: QKeyEvent) -> bool:
        if self.shortcut.count() == 1 and QKeySequence(event.keyCombination()) == self.shortcut:
            return True
        plain = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier == Qt.KeyboardModifier.NoModifier
        return event.key() == Qt.Key.Key_Space and plain and self._space_here(watched)
