"""One cancel signal per turn, passed explicitly to every stage (never via contextvars)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import anyio


@dataclass(frozen=True)
class User:
    """The person asked to stop (barge-in, push-to-talk, a stop button)."""


@dataclass(frozen=True)
class Parent:
    """An enclosing piece of work was cancelled."""


@dataclass(frozen=True)
class Hook:
    """A policy hook asked to stop; the reason stays in memory, never in the journal."""

    reason: str


@dataclass(frozen=True)
class Disposed:
    """The conversation is shutting down."""


CancelCause = User | Parent | Hook | Disposed


class CancelSignal:
    """Set once, never reset: workers poll it, coroutines await it, hooks react to it.

    `set` must be called on the event loop's thread; `cancelled` and
    `wait_blocking` are safe from worker threads.
    """

    def __init__(self) -> None:
        self._cause: CancelCause | None = None
        self._flag = threading.Event()
        self._event = asyncio.Event()
        self._callbacks: list[Callable[[CancelCause], None]] = []

    def __repr__(self) -> str:
        return f"CancelSignal(cancelled={self.cancelled})"

    @property
    def cancelled(self) -> bool:
        return self._flag.is_set()

    @property
    def cause(self) -> CancelCause | None:
        return self._cause

    def set(self, cause: CancelCause) -> bool:
        """Cancel; returns False if it was already cancelled (the first cause wins)."""
        if self._cause is not None:
            return False
        self._cause = cause
        self._flag.set()
        self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(cause)
        return True

    async def wait(self) -> CancelCause:
        await self._event.wait()
        assert self._cause is not None
        return self._cause

    def wait_blocking(self, timeout: float) -> bool:
        """Sleep in a worker thread, waking early on cancel; True when cancelled."""
        return self._flag.wait(timeout)

    def on_cancel(self, callback: Callable[[CancelCause], None]) -> Callable[[], None]:
        """Run `callback` at cancel time (at once if already cancelled); returns an unsubscribe."""
        if self._cause is not None:
            callback(self._cause)
            return _noop
        self._callbacks.append(callback)
        return lambda: self._unsubscribe(callback)

    def _unsubscribe(self, callback: Callable[[CancelCause], None]) -> None:
        if callback in self._callbacks:
            self._callbacks.remove(callback)


def _noop() -> None:
    return None


async def stopped() -> NoReturn:
    """Raise the cancellation of work that ended because its signal fired.

    Whoever set the signal may have cancelled this task's scope in the same instant (a dropped pause, a cancelled
    turn), and that cancellation reaches a task only at its next checkpoint: a thread that returned at that
    moment lets the task run on without it. A bare CancelledError raised then escapes the scope, which absorbs only
    its own, and ends the pipeline as a stray cancellation (seen in the window under load). One checkpoint first
    lets the scope's cancellation arrive as its own; with no scope cancelled the bare one follows, as before."""
    await anyio.lowlevel.checkpoint()
    raise asyncio.CancelledError
