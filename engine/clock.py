"""Clocks (adapters.contract.clock) are injected into everything that waits, so tests run on virtual time and
`--fast` skips idle time. The real clock is adapters.runtime.clock.SystemClock.

`SkippingClock` is the one fast-forward clock: on virtual time (tests) or on real time (`parley run --fast`). While
`autojump()` runs, it jumps to the next sleeper's deadline whenever the loop has nothing to run and no real work is
under way - a worker thread or a wait on the network (adapters.runtime.workers counts both) - so model and
provider time costs on the timeline what it costs in reality, and waiting for silence or playout costs nothing.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio

from adapters.runtime.tasks import open_tasks
from adapters.runtime.workers import real_work_under_way

IDLE_POLL_S = 0.002  # how often a busy or empty clock looks again (real seconds)


def _no_time() -> float:
    return 0.0


class SkippingClock:
    """Sleepers wake in deadline order; time moves by itself (`real=True`) or only when advanced or jumped."""

    def __init__(self, *, real: bool = False, start: float = 1000.0) -> None:
        self._base: Callable[[], float] = time.monotonic if real else _no_time
        self._offset = 0.0 if real else start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._new_sleeper = asyncio.Event()

    def now(self) -> float:
        return self._base() + self._offset

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now() + seconds, next(self._order), future))
        self._new_sleeper.set()
        await future

    def next_deadline(self) -> float | None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)
        return self._sleepers[0][0] if self._sleepers else None

    async def advance(self, seconds: float) -> None:
        """Move time forward by hand, waking sleepers in deadline order and letting each run."""
        target = self.now() + seconds
        while (deadline := self.next_deadline()) is not None and deadline <= target:
            self._jump_to(deadline)
            await settle()
        self._jump_to(target)
        await settle()

    @asynccontextmanager
    async def autojump(self, busy: Callable[[], bool] = real_work_under_way) -> AsyncIterator[None]:
        """While inside, jump to the next deadline whenever the loop is idle and `busy()` is false."""
        async with open_tasks(cancel_on_exit=True) as tasks:
            tasks.start(self._jump_forever, busy, name="clock-autojump")
            yield

    async def _jump_forever(self, busy: Callable[[], bool]) -> None:
        while True:
            await settle()
            if self._wake_due():
                continue  # let those woken run before time moves on (real time had made them due)
            deadline = self.next_deadline()
            if deadline is None or busy():
                self._new_sleeper.clear()
                wait = IDLE_POLL_S if deadline is None else min(IDLE_POLL_S, max(0.0, deadline - self.now()))
                with anyio.move_on_after(wait):  # real time on purpose: how long to look away
                    await self._new_sleeper.wait()
                continue
            self._jump_to(deadline)

    def _jump_to(self, at: float) -> None:
        self._offset += max(0.0, at - self.now())
        self._wake_due()

    def _wake_due(self) -> int:
        """Wake every sleeper due by now; how many were woken."""
        now, woken = self.now(), 0
        while self._sleepers and self._sleepers[0][0] <= now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
                woken += 1
        return woken


async def settle(rounds: int = 50) -> None:
    """Yield to the loop until no callbacks are ready (or `rounds` passes): everything runnable ran."""
    loop = asyncio.get_running_loop()
    for _ in range(rounds):
        await asyncio.sleep(0)
        if not getattr(loop, "_ready", None):
            await asyncio.sleep(0)
            if not getattr(loop, "_ready", None):
                return
