"""Issue 37: a reply that stopped at the reply limit (mid-sentence, maybe) says so under it, live and when the
conversation is opened again; a reply that ended by itself, or was interrupted, has no such mark."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pytestqt.qtbot import QtBot

from adapters.contract import Finish, TextDelta, Usage
from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.conversations import bubbles_of
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from engine.journal import read_events
from engine.testing import Emit, FakeLlm, Hang, reply
from tests.desktop.helpers import running_window, until

LENGTH = "… (cut at the reply length limit)"
TIME = "… (cut at the reply time limit)"


def test_a_reply_cut_at_the_limit_is_marked_under_it(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    cut = [
        Emit(TextDelta("Once upon a time, the ")),
        Emit(TextDelta("dragon")),
        Emit(Usage(10, 5)),
        Emit(Finish("length")),
    ]
    hangs = [Emit(TextDelta("And then ")), Emit(TextDelta("the knight")), Hang()]
    llm = FakeLlm([cut, reply("Two."), hangs])
    clock = SystemClock()
    config = replace(Config(), llm=replace(Config().llm, max_reply_s=1.0))
    voice = SimulatedVoice(clock, ms_per_word=5)
    session = Session(config, journal_dir=tmp_path, voice=voice, llm=llm, clock=clock)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            for turn, text in enumerate(("Tell me a story", "What is one plus one?", "Go on"), start=1):
                assert session.send_text(text)
                await until(lambda t=turn: t in window.trace.turns and window.trace.turns[t].outcome != "running")
            notes = [window.transcript_model.assistant(turn) for turn in (1, 2, 3)]
            assert [(b.heard, b.note) for b in notes if b is not None] == [
                ("Once upon a time, the dragon", LENGTH),
                ("Two.", ""),
                ("And then the knight", TIME),
            ]
            first = notes[0]
            assert first is not None
            widget = window.transcript.bubble_widget(first)
            assert widget.note.isVisible()
            assert widget.note.text() == LENGTH

    run(scenario())
    reopened = [(b.heard, b.note) for b in bubbles_of(read_events(session.journal_path)) if b.role == "assistant"]
    assert reopened == [("Once upon a time, the dragon", LENGTH), ("Two.", ""), ("And then the knight", TIME)]
