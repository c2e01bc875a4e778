"""Blocking work in a worker thread that is waited for, never abandoned, on cancel."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

T = TypeVar("T")


class StopFlag(threading.Event):
    """The stop event of one blocking job, which can also end a call already running (an ONNX inference, say)
    instead of waiting for it to return: hooks registered with `on_set` run when the flag is set."""

    def __init__(self) -> None:
        super().__init__()
        self._hooks: list[Callable[[], object]] = []
        self._hooks_lock = threading.Lock()

    def set(self) -> None:
        super().set()
        with self._hooks_lock:
            hooks, self._hooks = self._hooks, []
        for hook in hooks:
            hook()

    def on_set(self, hook: Callable[[], object]) -> Callable[[], None]:
        """Run `hook` when the flag is set (at once if it is already); returns a function that unregisters it."""
        with self._hooks_lock:
            if not self.is_set():
                self._hooks.append(hook)
                return lambda: self._remove(hook)
        hook()
        return lambda: None

    def _remove(self, hook: Callable[[], object]) -> None:
        with self._hooks_lock:
            if hook in self._hooks:
                self._hooks.remove(hook)


async def run_blocking(
    fn: Callable[[], T],
    executor: Executor | None = None,
    *,
    track: Callable[[asyncio.Future[T]], None] | None = None,
) -> T:
    """Run `fn` in a thread; if we are cancelled, still wait until the thread has returned.

    `fn` must poll its cancel signal in small steps; a thread that ignores it keeps
    the caller waiting, which is the honest "stopping" state (SPEC §5). `track` sees
    the job future so an owner (a turn) can wait for it too.
    """
    loop = asyncio.get_running_loop()
    job = loop.run_in_executor(executor, fn)
    if track is not None:
        track(job)
    try:
        return await asyncio.shield(job)
    except asyncio.CancelledError:
        await wait_settled(job)
        raise


async def wait_settled(job: asyncio.Future[T]) -> None:
    """Wait until `job` is done even if we are cancelled again meanwhile (quiescence over promptness)."""
    while not job.done():
        try:
            await asyncio.wait({job})
        except asyncio.CancelledError:
            continue
    if not job.cancelled():
        job.exception()  # mark retrieved: the caller is already unwinding with its own CancelledError
