"""Under qasync (Qt and asyncio on one loop), a turn cancelled from a Qt slot is quiescent when it ends: the worker
thread it started has returned before the turn is closed, and nothing the session started outlives it."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer

from adapters.contract import CancelSignal, Finish, GenerateOptions, StreamChunk, TextDelta
from adapters.runtime.clock import SystemClock
from adapters.runtime.workers import StopFlag, Worker, run_job
from desktop.config import Config
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from engine.events import TurnEnded
from tests.desktop.helpers import until


class ThinkingLlm:
    """Says a word, then thinks in a worker thread until stopped (and takes a while to finish its step); records
    when that thread has returned."""

    provider, model = "test", "thinking"

    def __init__(self) -> None:
        self.worker = Worker("test-thinking")
        self.thinking = threading.Event()
        self.returned = threading.Event()

    async def stream(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        yield TextDelta("Hmm, ")
        await run_job(self._think, signal, worker=self.worker)
        yield Finish("stop")

    def _think(self, stop: StopFlag) -> None:
        self.thinking.set()
        try:
            while not stop.wait(0.005):
                pass
            time.sleep(0.3)  # finishing the step under way: cancel must wait for it
        finally:
            self.returned.set()


def test_a_turn_cancelled_from_a_qt_slot_is_quiescent_when_it_ends(run: Any, tmp_path: Path) -> None:
    llm = ThinkingLlm()
    clock = SystemClock()
    session = Session(Config(), journal_dir=tmp_path, voice=SimulatedVoice(clock), llm=llm, clock=clock)
    ended: list[tuple[str, bool, int]] = []

    def on_event(event: object) -> None:
        if isinstance(event, TurnEnded):
            ended.append((event.outcome, llm.returned.is_set(), llm.worker.active))

    session.subscribe(on_event)

    async def scenario() -> None:
        async with session.running():
            session.send_text("Think about it")
            await until(llm.thinking.is_set, what="the worker thread is thinking")
            QTimer.singleShot(0, session.stop)  # the Stop button's slot, from Qt's side of the loop
            await until(lambda: ended, what="the turn ended")
            turn = session.conversation.live_turn if session.conversation else None
            assert turn is None

    run(scenario())
    assert ended == [("aborted", True, 0)], "the thread had returned before the turn was closed"
