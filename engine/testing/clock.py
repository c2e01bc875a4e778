"""A virtual clock: sleeps end when time is advanced, by hand or automatically when the loop is idle."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager


class VirtualClock:
    """Deterministic time for tests; `autojump` skips to the next deadline whenever nothing can run."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._new_sleeper = asyncio.Event()

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), future))
        self._new_sleeper.set()
        await future

    def next_deadline(self) -> float | None:
        self._drop_cancelled()
        return self._sleepers[0][0] if self._sleepers else None

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking sleepers in deadline order and letting each run."""
        target = self._now + seconds
        while (deadline := self.next_deadline()) is not None and deadline <= target:
            self._now = max(self._now, deadline)
            self._wake_due()
            await settle()
        self._now = target
        await settle()

    @asynccontextmanager
    async def autojump(self, busy: Callable[[], bool] = lambda: False) -> AsyncIterator[None]:
        """While inside, jump to the next deadline whenever the loop is idle and `busy()` is false."""
        task = asyncio.create_task(self._jump_forever(busy))
        try:
            yield
        finally:
            task.cancel()
            await asyncio.wait({task})

    async def _jump_forever(self, busy: Callable[[], bool]) -> None:
        while True:
            await settle()
            deadline = self.next_deadline()
            if deadline is None or busy():
                self._new_sleeper.clear()
                await _first_of(self._new_sleeper.wait(), asyncio.sleep(0.002))
                continue
            self._now = max(self._now, deadline)
            self._wake_due()

    def _wake_due(self) -> None:
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    def _drop_cancelled(self) -> None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)


async def settle(rounds: int = 50) -> None:
    """Yield to the loop until no callbacks are ready (or `rounds` passes): everything runnable ran."""
    loop = asyncio.get_running_loop()
    for _ in range(rounds):
        await asyncio.sleep(0)
        if not getattr(loop, "_ready", None):
            await asyncio.sleep(0)
            if not getattr(loop, "_ready", None):
                return


async def _first_of(*aws: object) -> None:
    tasks = [asyncio.ensure_future(aw) for aw in aws]  # type: ignore[call-overload]  # awaitables of mixed types
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
