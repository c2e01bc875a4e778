"""`--fast`: real time that skips ahead whenever nothing is running.

Model work (Whisper, the LLM, Piper) costs on the timeline what it costs in reality, so latencies in
the report are real; waiting (silence in the scenario, audio playing out) costs nothing.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from engine.testing.clock import settle

REAL_STEP_S = 0.002


class FastForwardClock:
    def __init__(self) -> None:
        self._offset = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return time.monotonic() + self._offset

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now() + seconds, next(self._order), future))
        await future

    @asynccontextmanager
    async def running(self, busy: Callable[[], bool]) -> AsyncIterator[None]:
        """Drive the sleepers while inside; `busy()` true means real work is going on: let real time pass."""
        task = asyncio.create_task(self._drive(busy))
        try:
            yield
        finally:
            task.cancel()
            await asyncio.wait({task})

    async def _drive(self, busy: Callable[[], bool]) -> None:
        while True:
            await settle()
            self._wake_due()
            deadline = self._next()
            if deadline is None or busy():
                wait = REAL_STEP_S if deadline is None else min(REAL_STEP_S, max(0.0, deadline - self.now()))
                await asyncio.sleep(wait)
            else:
                self._offset += max(0.0, deadline - self.now())

    def _next(self) -> float | None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)
        return self._sleepers[0][0] if self._sleepers else None

    def _wake_due(self) -> None:
        now = self.now()
        while self._sleepers and self._sleepers[0][0] <= now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
