"""Bounded worker threads for blocking model calls that stop on the turn's signal and are always waited for.

Shared by the ASR and TTS adapters (and their fakes): a job receives a `StopFlag` (a threading.Event)
that is set when the cancel signal fires *or* when the awaiting task is cancelled, polls it between
small steps (or ends a running step through the flag's hooks), and returns. The caller never walks
away from a running thread (SPEC §5).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from adapters.contract.cancel import CancelCause, CancelSignal
from adapters.contract.workers import StopFlag, wait_settled

T = TypeVar("T")
Job = Callable[[StopFlag], T]


class Worker:
    """A fixed pool of `threads` worker threads and a count of the jobs whose thread has not returned."""

    def __init__(self, name: str, threads: int = 1) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._active = 0

    @property
    def active(self) -> int:
        """Jobs submitted whose thread has not returned yet (0 means the worker is idle)."""
        with self._lock:
            return self._active

    async def run(self, job: Job[T], signal: CancelSignal) -> T:
        """Run `job(stop)` in the pool; on task cancellation set `stop`, wait for the thread, re-raise."""
        stop = StopFlag()

        def on_cancel(_cause: CancelCause) -> None:
            stop.set()

        unsubscribe = signal.on_cancel(on_cancel)
        try:
            future = self._submit(job, stop)
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError:
                stop.set()
                await wait_settled(future)
                raise
        finally:
            unsubscribe()

    def _submit(self, job: Job[T], stop: StopFlag) -> asyncio.Future[T]:
        with self._lock:
            self._active += 1
        try:
            return asyncio.get_running_loop().run_in_executor(self._pool, self._body, job, stop)
        except RuntimeError:  # the pool is shut down (interpreter exit): the job never ran
            with self._lock:
                self._active -= 1
            raise

    def _body(self, job: Job[T], stop: StopFlag) -> T:
        try:
            return job(stop)
        finally:
            with self._lock:
                self._active -= 1


ASR_WORKER = Worker("parley-asr")
TTS_WORKER = Worker("parley-tts")
