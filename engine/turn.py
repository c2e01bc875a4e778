"""A turn is a task group under one fresh cancel signal: when the group has closed, everything the turn started has
ended - tasks, worker threads (they are awaited by the tasks that started them), HTTP streams."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from adapters.contract import CancelCause, CancelSignal, Disposed
from adapters.runtime.tasks import Tasks, open_tasks

Source = Literal["voice", "text"]


@dataclass(frozen=True)
class Answered:
    """How the turn's answer ended: `error` is what it raised (None: it returned, or it was cancelled)."""

    error: Exception | None
    cancelled: bool


class Turn:
    """One user input and everything done to answer it; `cancel` sets the signal and cancels the group."""

    def __init__(self, turn_id: int, source: Source) -> None:
        self.id = turn_id
        self.source: Source = source
        self.signal = CancelSignal()
        self.finished = anyio.Event()
        self.withdrawn = False  # the person went on before hearing any reply: the turn leaves no trace
        self._tasks: Tasks | None = None

    def __repr__(self) -> str:
        return f"Turn({self.id}, cancelled={self.signal.cancelled}, pending={self.pending()})"

    async def run(self, answer: Callable[[], Awaitable[None]]) -> Answered:
        """Run `answer` as the turn's first task; return once the group has closed. Work still running when the
        answer ends (it should not be) is disposed of first."""
        ended: list[Answered] = []
        async with open_tasks() as tasks:
            self._tasks = tasks
            if self.signal.cancelled:
                tasks.cancel()
            tasks.start(self._answer, answer, ended, name=f"turn{self.id}:answer")
        self._tasks = None
        return ended[0] if ended else Answered(None, cancelled=True)

    def start(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str) -> None:
        """Start more work owned by the turn (it ends with the turn, errors fail it)."""
        if self._tasks is None:
            raise RuntimeError(f"turn {self.id} is not running")
        self._tasks.start(fn, *args, name=f"turn{self.id}:{name}")

    def cancel(self, cause: CancelCause) -> bool:
        """Set the signal and cancel the turn's tasks; False if the turn was already cancelled."""
        if self.signal.cancelled:
            return False
        if self._tasks is not None:
            self._tasks.cancel()  # first, so work waiting on the signal is cancelled where it waits
        return self.signal.set(cause)

    def pending(self) -> list[str]:
        """Names of the work still running (what a "stopping" turn is waiting for)."""
        return self._tasks.running if self._tasks is not None else []

    @property
    def quiescent(self) -> bool:
        return not self.pending()

    async def _answer(self, answer: Callable[[], Awaitable[None]], ended: list[Answered]) -> None:
        try:
            await answer()
        except Exception as error:  # noqa: BLE001 (the turn's failure, journalled by the conversation)
            ended.append(Answered(error, self.signal.cancelled))
        else:
            ended.append(Answered(None, self.signal.cancelled))
        finally:
            if self._tasks is not None and len(self._tasks.running) > 1:
                self.cancel(Disposed())
