"""Blocking work in worker threads that the awaiting task always waits for (SPEC §5): the one place threads are run.

Every blocking call goes through `run_blocking` (short calls: open a device, append to a file) or `run_job`
(model work in small steps, stoppable). Both use `anyio.to_thread.run_sync(..., abandon_on_cancel=False)`, so a
cancelled caller returns only once its thread has: leaving a task group *is* quiescence, threads included.
`running()` counts the jobs whose thread has not returned, which a fast-forward clock reads as "real work".
"""

from __future__ import annotations

import threading
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
import anyio.to_thread

from adapters.contract.cancel import CancelCause, CancelSignal, stopped

T = TypeVar("T")
Job = Callable[["StopFlag"], T]

_count_lock = threading.Lock()
_running = 0


def running() -> int:
    """Blocking jobs and network waits under way, process-wide."""
    with _count_lock:
        return _running


def real_work_under_way() -> bool:
    """Time spent now is real work (a thread computing, a provider answering): a fast clock must not skip it."""
    return running() > 0


@contextmanager
def real_work() -> Iterator[None]:
    """Mark a wait on something outside the process (the network) as real work for as long as it lasts."""
    _add_running(1)
    try:
        yield
    finally:
        _add_running(-1)


def _add_running(delta: int) -> None:
    global _running
    with _count_lock:
        _running += delta


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


class Worker:
    """The threads of one model: at most `threads` of its calls at once (a CapacityLimiter per event loop, since
    limiters belong to a loop) and the count of its jobs whose thread has not returned."""

    def __init__(self, name: str, threads: int = 1) -> None:
        self.name = name
        self._threads = threads
        self._limiters: weakref.WeakKeyDictionary[AbstractEventLoop, anyio.CapacityLimiter] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._active = 0

    def __repr__(self) -> str:
        return f"Worker({self.name!r}, active={self.active})"

    @property
    def active(self) -> int:
        """Jobs submitted whose thread has not returned yet (0 means the worker is idle)."""
        with self._lock:
            return self._active

    def limiter(self) -> anyio.CapacityLimiter:
        loop = get_running_loop()
        limiter = self._limiters.get(loop)
        if limiter is None:
            limiter = self._limiters[loop] = anyio.CapacityLimiter(self._threads)
        return limiter

    async def run(self, job: Job[T], signal: CancelSignal | None = None) -> T:
        """`job(stop)` on one of this worker's threads; see `run_job`."""
        return await run_job(job, signal, worker=self)

    async def answer(self, job: Job[T | None], signal: CancelSignal) -> T:
        """A model's answer: `job(stop)` returns None when it was stopped. No work once `signal` fired; stopped or
        cancelled meanwhile, CancelledError once the thread has returned (an answer after the cancel is dropped)."""
        if signal.cancelled:
            await stopped()
        result = await self.run(job, signal)
        if result is None or signal.cancelled:
            await stopped()
        return result

    def _count(self, delta: int) -> None:
        with self._lock:
            self._active += delta


@dataclass
class _Outcome(Generic[T]):
    value: T | None = None
    error: Exception | None = None
    done: bool = False
    finished: anyio.Event = field(default_factory=anyio.Event)


async def run_blocking(fn: Callable[[], T], *, worker: Worker | None = None) -> T:
    """A short blocking call in a thread; if the caller is cancelled meanwhile it still waits for the thread."""
    return await run_job(lambda _stop: fn(), worker=worker)


async def run_job(job: Job[T], signal: CancelSignal | None = None, *, worker: Worker | None = None) -> T:
    """Run `job(stop)` in a thread and return its result. `stop` is set when `signal` fires or the caller is
    cancelled; `job` must poll it between small steps (or end a running step through its hooks) and return.
    The caller never walks away from a running thread: a thread that ignores `stop` keeps it waiting, which is
    the honest "stopping" state."""
    stop = StopFlag()
    outcome: _Outcome[T] = _Outcome()
    unsubscribe = signal.on_cancel(_setter(stop)) if signal is not None else _noop
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_call, job, stop, worker, outcome)
            try:
                await outcome.finished.wait()
            finally:
                stop.set()  # the caller was cancelled (or the job is done): ask the thread to return
    finally:
        unsubscribe()
    if outcome.error is not None:
        raise outcome.error
    assert outcome.done
    return outcome.value  # type: ignore[return-value]  # set with done


async def _call(job: Job[T], stop: StopFlag, worker: Worker | None, outcome: _Outcome[T]) -> None:
    limiter = worker.limiter() if worker is not None else None
    counted = _counter(worker)
    counted(1)
    try:
        outcome.value = await anyio.to_thread.run_sync(job, stop, limiter=limiter, abandon_on_cancel=False)
        outcome.done = True
    except Exception as error:  # noqa: BLE001 (carried to the caller unchanged, outside the task group)
        outcome.error = error
    finally:
        counted(-1)
        outcome.finished.set()


def _counter(worker: Worker | None) -> Callable[[int], None]:
    def count(delta: int) -> None:
        _add_running(delta)
        if worker is not None:
            worker._count(delta)

    return count


def _setter(stop: StopFlag) -> Callable[[CancelCause], None]:
    def on_cancel(_cause: CancelCause) -> None:
        stop.set()

    return on_cancel


def _noop() -> None:
    return None
