"""Work a session starts from plain (synchronous) commands: owned, awaited on close, failures reported."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


class OwnedTasks:
    """Tasks started on the running loop; `settle()` waits until every one of them has ended."""

    def __init__(self, on_error: Callable[[BaseException], None]) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._on_error = on_error

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    async def settle(self) -> None:
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self._on_error(error)
