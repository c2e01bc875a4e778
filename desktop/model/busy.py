"""A conversation another Parley has open: what the window offers, without Qt (the dialog is desktop.qt.busy).

Only one process may write a journal (engine.journal_lock). When the conversation a window would open is held by
another window, it offers to bring that window forward or to start a new conversation here. The request is a file,
FOCUS_REQUEST, put in the conversation's folder: the window that has the conversation watches that folder, comes
forward and removes the file, which is the answer (no socket, nothing to bundle; the folder is private, 0700).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from desktop.model.facts import ConversationBusy

FOCUS, NEW = "focus", "new"
FOCUS_REQUEST = "come-forward.request"
ANSWER_WITHIN_S = 2.0  # a window that has not taken the request by then is not there (a `parley run`, say)


@dataclass(frozen=True)
class BusyQuestion:
    title: str
    text: str
    choices: tuple[tuple[str, str], ...]  # (choice, button label), the first one the default


def busy_question(event: ConversationBusy) -> BusyQuestion:
    """The question to ask: show the other window (the default), or start a new conversation here."""
    choices = ((FOCUS, "Show the other window"), (NEW, "Start a new conversation"))
    text = (
        f"The conversation {_name(event.path)} is open in another Parley window, and only one window can add to it. "
        "Show that window, or start a new conversation here?"
    )
    return BusyQuestion("Conversation open elsewhere", text, choices)


def focus_request(journal: Path) -> Path:
    """The file that asks the window holding `journal` to come forward."""
    return journal.parent / FOCUS_REQUEST


def _name(path: Path) -> str:
    return f"“{path.parent.name}”" if path.parent.name else str(path)
