"""The past conversations list: ordered by last use and labelled with it, titles wrapped inside the list (never cut
behind a scrollbar) with the whole first message on hover."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QApplication, QSplitter
from pytestqt.qtbot import QtBot

from desktop.model.conversations import when_used
from desktop.qt.conversations_dialog import ConversationsDialog

LONG = (
    "Could you tell me, slowly and in detail, how a dragon who never cooked before learns to make "
    "a proper soup for a village of hungry knights?"
)


def test_last_use_in_the_words_a_person_uses() -> None:
    now = dt.datetime(2026, 3, 12, 15, 30).timestamp()  # a Thursday

    def at(*when: int) -> str:
        return when_used(dt.datetime(*when).timestamp(), now)  # type: ignore[arg-type]

    assert at(2026, 3, 12, 14, 2) == "Today 14:02"
    assert at(2026, 3, 11, 9, 15) == "Yesterday 09:15"
    assert at(2026, 3, 9, 18, 40) == "Monday 18:40"
    assert at(2026, 3, 3, 8, 5) == "3 Mar 08:05"
    assert at(2025, 12, 24, 20, 0) == "24 Dec 2025, 20:00"


def _conversation(base: Path, folder: str, first: str, started: dt.datetime, used: dt.datetime) -> Path:
    path = base / folder / "journal.jsonl"
    path.parent.mkdir(parents=True)
    events = [
        {"seq": 1, "time": started.timestamp(), "type": "session/start", "version": "0.1.0"},
        {"seq": 2, "time": started.timestamp(), "type": "turn/start", "turn": 1, "source": "text"},
        {"seq": 3, "time": started.timestamp(), "type": "user/message", "turn": 1, "text": first},
        {"seq": 4, "time": used.timestamp(), "type": "turn/end", "turn": 1, "outcome": "completed"},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    os.utime(path, (used.timestamp(), used.timestamp()))
    return path


def test_the_list_is_labelled_by_last_use_as_it_is_ordered_and_titles_wrap(qtbot: QtBot, tmp_path: Path) -> None:
    today = dt.datetime.now().replace(second=0, microsecond=0)
    early = today.replace(hour=0, minute=5)
    old = _conversation(tmp_path, "a", LONG, early - dt.timedelta(days=3), early)  # started first, used today
    recent = _conversation(
        tmp_path,
        "b",
        "What is two plus two?",
        early - dt.timedelta(days=1, hours=-8),
        early - dt.timedelta(days=1, hours=-9),
    )
    dialog = ConversationsDialog(tmp_path, None, lambda _path: None)
    try:
        dialog.show()
        QApplication.processEvents()
        items = [dialog.list.item(n) for n in range(dialog.list.count())]
        infos = [item.data(Qt.ItemDataRole.UserRole) for item in items]
        assert [info.path for info in infos] == [old, recent], "newest use first"
        labels = [item.text().splitlines()[0] for item in items]
        assert labels == [f"Today {early:%H:%M}", f"Yesterday {early + dt.timedelta(hours=9):%H:%M}"]
        assert LONG in items[0].toolTip(), "the whole first message on hover"

        split = dialog.findChild(QSplitter)
        assert split is not None
        for width in (360, 180):
            split.setSizes([width, dialog.width() - width])
            QApplication.processEvents()
            view = dialog.list
            assert view.horizontalScrollBar().maximum() == 0, "nothing hidden to the side"
            for item in items:
                rect = view.visualItemRect(item)
                assert rect.width() <= view.viewport().width(), "a row is never wider than the list"
                wrapped = view.fontMetrics().boundingRect(
                    QRect(0, 0, rect.width() - 8, 10_000), Qt.TextFlag.TextWordWrap, item.text()
                )
                assert wrapped.height() <= rect.height(), "every line of the title is in its row"
    finally:
        dialog.deleteLater()
