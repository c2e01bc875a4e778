"""The menu bar: what a desktop app has (About, Help, Close, Quit) and every command with its shortcut."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from html import escape

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QWidget

from desktop.model.wording import about_text, help_text
from desktop.qt.text_dialog import TextDialog


@dataclass
class Commands:
    """What the menu triggers; the window supplies each."""

    new_conversation: Callable[[], None]
    past_conversations: Callable[[], None]
    copy_conversation: Callable[[], None]
    settings: Callable[[], None]
    close: Callable[[], None]
    quit: Callable[[], None]
    stop: Callable[[], None]
    toggle_hands_free: Callable[[], None]
    show_trace: Callable[[bool], None]
    zoom: Callable[[int], None]
    shortcut: Callable[[], str]


class Menu:
    """Builds the menu bar on `window`; `actions` by name, for tests and for the window to update."""

    def __init__(self, window: QMainWindow, commands: Commands) -> None:
        self._window = window
        self.actions: dict[str, QAction] = {}
        bar = window.menuBar()
        conversation = bar.addMenu("&Conversation")
        self._add(conversation, "new", "&New conversation", commands.new_conversation, QKeySequence.StandardKey.New)
        self._add(conversation, "past", "&Past conversations…", commands.past_conversations, "Ctrl+O")
        self._add(conversation, "copy", "&Copy the whole conversation", commands.copy_conversation, "Ctrl+Shift+C")
        conversation.addSeparator()
        self._add(conversation, "stop", "&Stop Parley (and leave the text box)", commands.stop, "Esc")
        self._add(conversation, "hands_free", "&Hands-free listening", commands.toggle_hands_free, "Ctrl+L")
        conversation.addSeparator()
        self._add(conversation, "settings", "S&ettings…", commands.settings, "Ctrl+,")
        conversation.addSeparator()
        self._add(conversation, "close", "C&lose window", commands.close, "Ctrl+W")
        self._add(conversation, "quit", "&Quit Parley", commands.quit, "Ctrl+Q")
        view = bar.addMenu("&View")
        trace = self._add(view, "trace", "Show the &trace (attempts, timings)", lambda: None, "Ctrl+T")
        trace.setCheckable(True)
        trace.toggled.connect(commands.show_trace)
        view.addSeparator()
        self._add(view, "zoom_in", "Zoom &in", lambda: commands.zoom(1), QKeySequence.StandardKey.ZoomIn)
        self.actions["zoom_in"].setShortcuts([QKeySequence("Ctrl++"), QKeySequence("Ctrl+=")])
        self._add(view, "zoom_out", "Zoom &out", lambda: commands.zoom(-1), QKeySequence.StandardKey.ZoomOut)
        self._add(view, "zoom_reset", "&Actual size", lambda: commands.zoom(0), "Ctrl+0")
        help_menu = bar.addMenu("&Help")
        self._add(help_menu, "help", "Parley &help", lambda: self._help(commands.shortcut()), "F1")
        self._add(help_menu, "about", "&About Parley", self._about, None)

    def _add(
        self,
        menu: QWidget,
        name: str,
        text: str,
        slot: Callable[[], None],
        shortcut: str | QKeySequence.StandardKey | None,
    ) -> QAction:
        action = QAction(text, self._window)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        self._window.addAction(action)  # shortcuts work while the menu bar is hidden too
        self.actions[name] = action
        return action

    def _help(self, shortcut: str) -> None:
        self._show(TextDialog("Parley help", help_text(shortcut), "help", self._window))

    def _about(self) -> None:
        self._show(TextDialog("About Parley", escape(about_text()).replace("\n", "<br>"), "about", self._window))

    def _show(self, dialog: TextDialog) -> None:
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
