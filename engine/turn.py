"""A turn owns every task and thread job it starts; cancelling it waits until all of them have ended."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor
from typing import Any, Literal, TypeVar

from adapters.contract import CancelCause, CancelSignal
from adapters.contract.workers import run_blocking

T = TypeVar("T")
Source = Literal["voice", "text"]


class Turn:
    """One user input and everything done to answer it, under one fresh cancel signal."""

    def __init__(self, turn_id: int, source: Source, executor: Executor) -> None:
        self.id = turn_id
        self.source: Source = source
        self.signal = CancelSignal()
        self.finished = asyncio.Event()
        self._executor = executor
        self._tasks: set[asyncio.Task[Any]] = set()
        self._jobs: set[asyncio.Future[Any]] = set()

    def __repr__(self) -> str:
        return f"Turn({self.id}, cancelled={self.signal.cancelled}, pending={self.pending()})"

    def spawn(self, coro: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        """Start owned work; work started after cancel is cancelled at once."""
        task = asyncio.get_running_loop().create_task(coro, name=f"turn{self.id}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if self.signal.cancelled:
            task.cancel()
        return task

    async def in_thread(self, fn: Callable[[], T]) -> T:
        """Run blocking work in the bounded pool; `fn` must watch `self.signal` between small steps."""
        return await run_blocking(fn, self._executor, track=self._track)

    def _track(self, job: asyncio.Future[Any]) -> None:
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)

    def cancel(self, cause: CancelCause) -> bool:
        """Set the signal and cancel owned tasks; False if the turn was already cancelled."""
        if not self.signal.set(cause):
            return False
        for task in list(self._tasks):
            task.cancel()
        return True

    def pending(self) -> list[str]:
        """Names of the work still running (what a "stopping" turn is waiting for)."""
        tasks = [task.get_name() for task in self._tasks if not task.done()]
        return tasks + ["thread job"] * self.threads_busy

    @property
    def threads_busy(self) -> int:
        """Worker-thread jobs still running (a virtual clock must not jump past them)."""
        return sum(not job.done() for job in self._jobs)

    @property
    def quiescent(self) -> bool:
        return not self.pending()

    async def quiesce(self) -> None:
        """Wait, without any timeout, until every task and thread job of the turn has ended."""
        while work := {w for w in (*self._tasks, *self._jobs) if not w.done()}:
            await asyncio.wait(work)
