"""Owned concurrent work: the one way Parley starts tasks (an anyio task group underneath).

Leaving `open_tasks()` means every task started in it has ended - and their worker threads too, since
`run_job` waits for its thread. Children are named (what a "stopping" state is waiting for). A child's error goes to
`on_error` and the other work goes on (a listener that fails must not take the session down), or, without
`on_error`, cancels the group and is raised when it closes. The block's own exception comes out as it was raised,
not wrapped in an ExceptionGroup as a bare task group would.

A child that raises CancelledError when nothing cancelled it (a stopped model call reported as a cancel to a
caller outside any cancelled scope) is a failure like any other: a bare anyio group would quietly cancel itself
and everything it hosts (docs/decisions/0002 tells what that did once).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import TaskGroup

ErrorHandler = Callable[[str, Exception], None]


class StrayCancellation(RuntimeError):
    """A task raised CancelledError that no cancellation asked for (its cause holds where)."""


def _cancel_requested() -> bool:
    """Was this task asked to cancel (a native cancel, or a cancel scope around it: anyio delivers that at the
    next await, so code that sees its signal set may raise first), rather than raising it by itself?"""
    task = asyncio.current_task()
    if task is None or task.cancelling() > 0:
        return True
    return anyio.current_effective_deadline() == -math.inf


class Tasks:
    """A handle on an open group: start owned work, see what still runs, cancel it all."""

    def __init__(self, group: TaskGroup, on_error: ErrorHandler | None) -> None:
        self._group = group
        self._on_error = on_error
        self._running: list[str] = []
        self.errors: list[Exception] = []

    def start(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str) -> None:
        """Run `fn(*args)` as a task of this group (call it on the event loop's thread)."""
        self._group.start_soon(self._run, fn, args, name, name=name)

    @property
    def running(self) -> list[str]:
        """Names of the tasks that have not ended yet."""
        return list(self._running)

    @property
    def cancelled(self) -> bool:
        return self._group.cancel_scope.cancel_called

    def cancel(self) -> None:
        """Cancel every task of the group; the group still waits for each to end (threads included)."""
        self._group.cancel_scope.cancel()

    async def _run(self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...], name: str) -> None:
        self._running.append(name)
        try:
            await fn(*args)
        except Exception as error:  # noqa: BLE001 (reported to the owner, never lost; cancellation passes through)
            self._failed(name, error)
        except anyio.get_cancelled_exc_class() as cancelled:
            if _cancel_requested():
                raise
            stray = StrayCancellation(f"task {name!r} raised CancelledError that no cancellation asked for")
            stray.__cause__ = cancelled
            self._failed(name, stray)
        finally:
            self._running.remove(name)

    def _failed(self, name: str, error: Exception) -> None:
        if self._on_error is not None:
            self._on_error(name, error)
            return
        self.errors.append(error)
        self.cancel()


@asynccontextmanager
async def open_tasks(*, on_error: ErrorHandler | None = None, cancel_on_exit: bool = False) -> AsyncIterator[Tasks]:
    """A task group for the block; on leaving it, the tasks are cancelled (`cancel_on_exit`) or waited for."""
    raised: list[Exception] = []
    async with anyio.create_task_group() as group:
        tasks = Tasks(group, on_error)
        try:
            yield tasks
        except Exception as error:  # noqa: BLE001 (raised again below, unwrapped, once the group has closed)
            raised.append(error)
            tasks.cancel()
        finally:
            if cancel_on_exit:
                tasks.cancel()
    if raised:
        raise raised[0]
    if tasks.errors:
        raise tasks.errors[0]
