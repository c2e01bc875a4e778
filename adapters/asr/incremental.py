"""Transcribe while the user is still speaking, so the final transcript is ready soon after they stop.

Simple and honest: every `interval_s` (at most) the whole growing utterance is transcribed again
and the latest result kept. Whisper's cost is dominated by its fixed 30 s encoder window, so
redoing only a tail would not be cheaper. At `finish`, the latest pass is reused when no new
audio arrived since it, or when everything after it is quiet (the VAD's hang-over silence);
otherwise one last full pass runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import numpy as np

from adapters.asr import guard
from adapters.contract.cancel import CancelCause, CancelSignal
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples, Transcriber, Transcript

TAIL_QUIET_DBFS = -45.0  # a tail this quiet holds no new words worth a pass


class IncrementalTranscriber:
    """Feed with `append`, run `run(signal)` as a task while speech lasts, then `await finish(signal)`."""

    def __init__(
        self,
        transcriber: Transcriber,
        *,
        interval_s: float = 0.8,
        min_new_s: float = 0.3,
        on_partial: Callable[[Transcript], None] | None = None,
    ) -> None:
        self._transcriber = transcriber
        self._interval_s = interval_s
        self._min_new = round(min_new_s * ASR_SAMPLE_RATE)
        self._on_partial = on_partial
        self._chunks: list[Samples] = []
        self._length = 0
        self._covered = 0
        self._latest: Transcript | None = None
        self._wake = asyncio.Event()
        self._stopped = asyncio.Event()  # the utterance ended or the signal fired
        self._ended = False
        self._pass_lock = asyncio.Lock()
        self.passes = 0
        self.reused_final = False

    @property
    def latest(self) -> Transcript | None:
        """The most recent (partial) transcript, or None before the first pass."""
        return self._latest

    @property
    def buffered_s(self) -> float:
        return self._length / ASR_SAMPLE_RATE

    @property
    def covered_s(self) -> float:
        """How much of the buffered audio the latest pass has seen."""
        return self._covered / ASR_SAMPLE_RATE

    def append(self, samples: Samples) -> None:
        """Add mono float32 16 kHz audio (call on the event loop thread)."""
        if len(samples):
            self._chunks.append(np.asarray(samples, dtype=np.float32))
            self._length += len(samples)
            self._wake.set()

    async def run(self, signal: CancelSignal) -> None:
        """Re-transcribe at most every `interval_s` (once `min_new_s` of new audio is in) until `finish` or `signal`."""
        unsubscribe = signal.on_cancel(self._on_cancel)
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                if self._ended or signal.cancelled:
                    return
                if self._length - self._covered < self._min_new:
                    continue  # too little new audio to change the result; wait for more
                started = asyncio.get_running_loop().time()
                async with self._pass_lock:
                    if self._ended:
                        return
                    await self._transcribe(signal)
                await self._rest_until(started + self._interval_s)
        finally:
            unsubscribe()

    async def finish(self, signal: CancelSignal) -> Transcript:
        """The final transcript: the latest pass when it already covers the speech, else one more pass."""
        self._ended = True
        self._stop_waiting()
        async with self._pass_lock:
            latest = self._latest
            if latest is not None and self._tail_is_quiet():
                self.reused_final = True
                return latest
            return await self._transcribe(signal)

    async def _transcribe(self, signal: CancelSignal) -> Transcript:
        length = self._length
        audio = np.concatenate(self._chunks) if self._chunks else np.zeros(0, dtype=np.float32)
        self._chunks = [audio] if len(audio) else []
        result = await self._transcriber.transcribe(audio, signal)
        self.passes += 1
        self._latest, self._covered = result, length
        if self._on_partial is not None and not self._ended:
            self._on_partial(result)
        return result

    def _tail_is_quiet(self) -> bool:
        if self._covered >= self._length:
            return True
        tail = np.concatenate(self._chunks)[self._covered :]
        return guard.dbfs(tail) < TAIL_QUIET_DBFS

    async def _rest_until(self, deadline: float) -> None:
        """Sleep until `deadline`, waking early when the utterance ends or the signal fires."""
        delay = deadline - asyncio.get_running_loop().time()
        if delay > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stopped.wait()

    def _stop_waiting(self) -> None:
        self._wake.set()
        self._stopped.set()

    def _on_cancel(self, _cause: CancelCause) -> None:
        self._stop_waiting()
