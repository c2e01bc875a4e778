"""The qasync event loop the app (and its tests) run on: Qt and asyncio on one thread.

qasync 0.28 replaces `run_forever` without installing asyncio's async-generator hooks, so an
async generator left suspended (httpx/httpcore keep inner ones) would be finalized outside the
loop, and its cleanup would fail. `run` installs the loop's own hooks for as long as it runs,
which is what asyncio's `run_forever` does; `close` then shuts down what is left.
Each loop runs under `qt_guards.MainThreadGc` (garbage collection on the loop's thread only).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import qasync
from PySide6.QtCore import QCoreApplication

from desktop.qt.qt_guards import MainThreadGc

T = TypeVar("T")
_guards: dict[int, MainThreadGc] = {}


def new_loop(app: QCoreApplication, *, workers: int = 2) -> qasync.QEventLoop:
    """A loop bound to `app`, made current; its default executor is plain threads (not QThreads)."""
    loop = qasync.QEventLoop(app)
    loop.set_default_executor(ThreadPoolExecutor(workers, "parley-loop"))
    asyncio.set_event_loop(loop)
    _guards[id(loop)] = guards = MainThreadGc(loop)
    guards.start()
    return loop


def run(loop: qasync.QEventLoop, awaitable: Awaitable[T]) -> T:
    previous = sys.get_asyncgen_hooks()
    sys.set_asyncgen_hooks(
        firstiter=getattr(loop, "_asyncgen_firstiter_hook"),  # noqa: B009 (asyncio's own hooks, not public)
        finalizer=getattr(loop, "_asyncgen_finalizer_hook"),  # noqa: B009
    )
    try:
        result: T = loop.run_until_complete(awaitable)
        return result
    finally:
        sys.set_asyncgen_hooks(*previous)


def close(loop: qasync.QEventLoop) -> None:
    guards = _guards.pop(id(loop), None)
    if guards is not None:
        guards.stop()
    run(loop, loop.shutdown_asyncgens())
    loop.close()
    asyncio.set_event_loop(None)
