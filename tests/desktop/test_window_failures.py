"""Issue 38 in the window: a full disk, a conversation open in another process and a misfit journal each say so
in one banner, never pretend to be Ready or swallow what is typed, and quitting always works."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QMessageBox, QPushButton
from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.conversations import list_conversations
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from desktop.qt.busy import ComeForward, ask_to_come_forward
from desktop.qt.conversations_dialog import ConversationsDialog
from desktop.qt.window import MainWindow
from engine.events import State
from engine.invariants import violations
from engine.journal import read_events, read_journal
from engine.testing import FakeLlm, reply
from tests.desktop.helpers import running_window, until
from tests.journal_holder import held_elsewhere
from tests.small_disk import fill, small_disk

ROOT = Path(__file__).resolve().parents[2]


def _session(journal_dir: Path, answers: int = 4, *, resume: bool = False) -> Session:
    clock = SystemClock()
    llm = FakeLlm([reply(f"Answer {n}.") for n in range(1, answers + 1)])
    voice = SimulatedVoice(clock, ms_per_word=10)
    return Session(Config(), journal_dir=journal_dir, voice=voice, llm=llm, clock=clock, resume=resume)


async def _ask(window: MainWindow, text: str) -> None:
    turns = len(window.trace.turns)
    assert window.session.send_text(text)
    await until(lambda: len(window.trace.turns) > turns and window.chip.state is State.IDLE, what=f"answered {text}")
    await until(lambda: all(t.outcome != "running" for t in window.trace.turns.values()), what="turn closed")


def _said(window: MainWindow, text: str) -> bool:
    return "journal" in window.banners.banners and text in window.banners.banners["journal"].label.text()


async def _quit(window: MainWindow) -> None:
    """Ctrl+Q, as the person would; the window must go (bounded), whatever died before."""
    window.menu.actions["quit"].trigger()
    await until(window.closed.is_set, what="the window closed after Ctrl+Q")


def test_a_full_disk_stops_the_conversation_says_so_keeps_typing_and_quitting_works(
    run: Any, qtbot: QtBot, tmp_path: Path
) -> None:
    with small_disk(tmp_path / "disk", size_kb=64) as disk:
        session = _session(disk / "sessions")
        first = session.journal_path

        async def scenario() -> None:
            async with running_window(session, tmp_path / "config.toml") as window:
                await _ask(window, "Hello")
                fill(disk)
                assert session.send_text("Tell me more " + "and more " * 800)  # a line no page has room for
                await until(lambda: "journal" in window.banners.banners, what="the full disk said")
                said = window.banners.banners["journal"].label.text()
                assert "ENOSPC" in said
                assert str(first) in said
                assert "missing_model" not in window.banners.banners, "the language model is fine"
                assert window.chip.text().startswith("Stopped")
                assert window.model_label.text() == "Not running: cannot save the conversation"
                qtbot.keyClicks(window.controls.message, "are you there")
                qtbot.keyClick(window.controls.message, Qt.Key.Key_Return)
                assert window.controls.message.text() == "are you there", "kept: it could not be saved"
                assert "ENOSPC" in window.banners.banners["journal"].label.text()
                (disk / "filler").unlink()  # space again: opened from Past conversations, it goes on
                _continue_from_past_conversations(window, first)
                await until(lambda: session.conversation is not None, what="opened again")
                assert "journal" not in window.banners.banners
                assert window.chip.text() == "Ready"
                assert [b.text for b in window.transcript_model.bubbles if b.role == "user"][:1] == ["Hello"]
                await _ask(window, "Still there?")
                fill(disk)
                window.menu.actions["new"].trigger()  # Ctrl+N on the full disk: refused, said, not stuck
                await until(lambda: session.journal_path != first and _said(window, str(session.journal_path)))
                await _quit(window)

        run(scenario())
        data = first.read_bytes()
        assert data.endswith(b"\n")
        found = read_journal(first)
        assert not found.bad
        assert not found.torn
        said = [e["text"] for e in found.events if e["type"] == "user/message"]
        assert said[0] == "Hello", "the first turn, on disk before it filled up, is kept"
        assert said[-1] == "Still there?"
        assert violations(found.events) == []
        assert {"turn": 1, "outcome": "completed"}.items() <= next(
            e for e in found.events if e["type"] == "turn/end"
        ).items()


def _continue_from_past_conversations(window: MainWindow, journal: Path) -> None:
    window.open_conversations()
    (dialog,) = [d for d in window.findChildren(ConversationsDialog) if d.isVisible()]
    rows = range(dialog.list.count())
    (row,) = [i for i in rows if dialog.list.item(i).data(Qt.ItemDataRole.UserRole).path == journal]
    dialog.list.setCurrentRow(row)
    assert dialog.continue_button.isEnabled(), "the stopped conversation can be opened again"
    dialog.continue_button.click()


def _busy_box(window: MainWindow) -> QMessageBox | None:
    box = window.findChild(QMessageBox, "busy")
    return box if isinstance(box, QMessageBox) and box.isVisible() else None


def _button(box: QMessageBox, label: str) -> QPushButton:
    (button,) = [b for b in box.findChildren(QPushButton) if b.text() == label]
    return button


def test_a_conversation_open_in_another_process_offers_a_new_one_and_its_record_stays_whole(
    run: Any, tmp_path: Path
) -> None:
    theirs = tmp_path / "sessions" / "2026-01-01_10-00-00" / "journal.jsonl"
    with held_elsewhere(theirs):
        session = _session(tmp_path / "sessions", resume=True)
        assert session.journal_path == theirs

        async def scenario() -> None:
            async with running_window(session, tmp_path / "config.toml") as window:
                await until(lambda: _busy_box(window) is not None, what="asked what to do")
                assert window.model_label.text() == "Not running: this conversation is open elsewhere"
                assert not session.send_text("hello")
                assert "open in another Parley window" in window.banners.banners["busy"].label.text()
                box = _busy_box(window)
                assert box is not None
                _button(box, "Start a new conversation").click()
                await until(lambda: session.journal_path != theirs and session.conversation is not None, what="new")
                assert "busy" not in window.banners.banners
                await _ask(window, "Hello")

        run(scenario())
        before = theirs.read_bytes()
    assert theirs.read_bytes().startswith(before)
    events = read_events(theirs)
    assert [e["type"] for e in events] == ["turn/start", "user/message", "turn/end"], "theirs, untouched by us"
    assert violations(events) == []
    ours = read_events(session.journal_path)
    assert [e["text"] for e in ours if e["type"] == "user/message"] == ["Hello"]
    assert violations(ours) == []


def test_asking_to_show_the_other_window_says_so_when_nobody_answers(run: Any, tmp_path: Path) -> None:
    theirs = tmp_path / "sessions" / "2026-01-01_10-00-00" / "journal.jsonl"
    with held_elsewhere(theirs):  # a process that holds it but has no window (a `parley run`, say)
        session = _session(tmp_path / "sessions", resume=True)

        async def scenario() -> None:
            async with running_window(session, tmp_path / "config.toml") as window:
                await until(lambda: _busy_box(window) is not None, what="asked what to do")
                box = _busy_box(window)
                assert box is not None
                _button(box, "Show the other window").click()
                await until(lambda: "did not answer" in window.banners.banners["busy"].label.text(), within=10)
                assert not (theirs.parent / "come-forward.request").exists(), "the request was withdrawn"
                assert window.isVisible()
                await _quit(window)

        run(scenario())


def test_a_second_window_on_the_conversation_brings_the_first_forward_and_closes(run: Any, tmp_path: Path) -> None:
    """Two real windows (processes) on one data folder: the second is refused the conversation, asks the first to
    come forward, and goes; the first keeps its record whole and still closes in order."""
    sessions = tmp_path / "sessions"
    first = _window_process(tmp_path, sessions)
    try:
        theirs = _wait_for_journal(first, sessions)
        before = read_events(theirs)
        session = _session(sessions, resume=True)
        assert session.journal_path == theirs

        async def scenario() -> None:
            async with running_window(session, tmp_path / "config.toml") as window:
                await until(lambda: _busy_box(window) is not None, within=30, what="asked what to do")
                box = _busy_box(window)
                assert box is not None
                _button(box, "Show the other window").click()
                await until(window.closed.is_set, within=10, what="this window went; the other came forward")
                assert "did not answer" not in _busy_text(window)

        run(scenario(), within=60)
        assert not (theirs.parent / "come-forward.request").exists(), "the first window took the request"
        assert first.poll() is None, "the first window is still there"
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 143
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    events = read_events(theirs)
    assert events[: len(before)] == before
    assert [e["type"] for e in events].count("session/start") == 1, "the second window wrote nothing to it"
    assert violations(events) == []


def _busy_text(window: MainWindow) -> str:
    return window.banners.banners["busy"].label.text() if "busy" in window.banners.banners else ""


def _window_process(tmp_path: Path, sessions: Path) -> subprocess.Popen[bytes]:
    """`parley` (the window, offscreen) on `sessions`, with a language model that is never reached and no
    microphone (the simulated voice): it opens a conversation and holds it."""
    config = tmp_path / "first.toml"
    config.write_text(
        '[llm]\nprovider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[audio]\ninput_device = "no such microphone"\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PARLEY_")}
    env |= {"PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen", "XDG_DATA_HOME": str(tmp_path / "data")}
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"  # never the person's own keyring
    argv = [sys.executable, "-m", "desktop.cli", "--config", str(config), "--journal-dir", str(sessions)]
    return subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_for_journal(process: subprocess.Popen[bytes], sessions: Path) -> Path:
    """The first window's journal once it is open (bounded polling; the process must still run)."""
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, f"the first window ended early with {process.returncode}"
        found = next(iter(sessions.glob("*/journal.jsonl")), None)
        if found is not None and any(e["type"] == "session/start" for e in read_events(found)):
            return found
        assert time.monotonic() < deadline, "the first window did not open its conversation"
        time.sleep(0.05)


def test_the_window_that_has_the_conversation_comes_forward_when_asked(run: Any, tmp_path: Path) -> None:
    journal = tmp_path / "conversation" / "journal.jsonl"
    journal.parent.mkdir()
    came: list[int] = []
    answers: list[bool] = []
    owner = QObject()
    listening = ComeForward(lambda: came.append(1), owner)
    listening.watch(journal)

    async def scenario() -> None:
        ask_to_come_forward(journal, answers.append, owner)
        await until(lambda: answers != [], what="an answer")

    try:
        run(scenario())
    finally:
        listening.stop()
        owner.deleteLater()
    assert answers == [True]
    assert came == [1]


def test_a_journal_with_misfit_lines_opens_with_the_rest_and_says_which_line_went(run: Any, tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "2026-01-01_10-00-00" / "journal.jsonl"
    path.parent.mkdir(parents=True)
    good = [
        {"seq": 1, "time": 5.0, "type": "turn/start", "turn": 1, "source": "text"},
        {"seq": 2, "time": 5.1, "type": "user/message", "turn": 1, "text": "Remember the blue door"},
        {"seq": 3, "time": 5.2, "type": "turn/end", "turn": 1, "outcome": "completed"},
    ]
    misfit = '{"seq": "4", "time": 5.3, "type": "user/message", "turn": 2}'
    lines = [json.dumps(e) for e in good[:2]] + [misfit, "[1, 2]", json.dumps(good[2])]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    other = tmp_path / "sessions" / "2025-12-31_10-00-00" / "journal.jsonl"
    other.parent.mkdir()
    other.write_text(json.dumps(good[0]) + "\n", encoding="utf-8")
    os.utime(other, (1.0, 1.0))  # written before: the damaged one is the latest
    assert [c.readable for c in list_conversations(tmp_path / "sessions")] == [True, True], "nothing hidden"
    session = _session(tmp_path / "sessions", resume=True)
    assert session.journal_path == path

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            said = window.banners.banners["quarantine"].label.text()
            assert f"{path}: line 3" in said
            assert "1 more" in said
            assert window.transcript_model.bubbles[0].text == "Remember the blue door"
            assert window.model_label.text().startswith("Model:")
            await _ask(window, "Which door?")

    run(scenario())
    assert path.with_name("journal.jsonl.quarantined").read_text(encoding="utf-8") == f"{misfit}\n[1, 2]\n"
    events = read_events(path)
    assert [e["text"] for e in events if e["type"] == "user/message"] == ["Remember the blue door", "Which door?"]
    assert violations(events) == []
