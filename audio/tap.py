"""The playback reference tap: what the speaker played, with DAC timestamps, read back on the mic's timeline."""

from __future__ import annotations

import collections

import numpy as np
import soxr

from audio.ports import RATE

KEEP_S = 3.0  # how much played audio stays readable
RESYNC_S = 0.2  # a DAC-time jump this large re-anchors the timeline (xrun, restart); jitter never does


class ReferenceTap:
    """Filled from the playback thread (`push`, lock-free deque append), read on the loop (`read`).

    `read(at, n)` returns the n samples (16 kHz) that were audible from clock time `at`; silence where
    nothing was played or the history is gone.
    """

    def __init__(self, rate_in: int, max_blocks: int = 1000) -> None:
        self._rate_in = rate_in
        self._inbox: collections.deque[tuple[float, np.ndarray]] = collections.deque(maxlen=max_blocks)
        self._resampler: soxr.ResampleStream | None = None
        self._buffer = np.zeros(0, dtype=np.float32)
        self._t0: float | None = None  # clock time of self._buffer[0]
        self._expected: float | None = None  # DAC time the next input block should start at
        self.resyncs = 0

    def push(self, dac_time: float, block: np.ndarray) -> None:
        """From the audio thread: one small copy and a deque append, nothing else."""
        self._inbox.append((dac_time, block.copy()))

    def read(self, at: float, n: int) -> np.ndarray:
        self._drain()
        out = np.zeros(n, dtype=np.float32)
        if self._t0 is None:
            return out
        start = round((at - self._t0) * RATE)
        lo, hi = max(start, 0), min(start + n, len(self._buffer))
        if hi > lo:
            out[lo - start : hi - start] = self._buffer[lo:hi]
        return out

    def _drain(self) -> None:
        while self._inbox:
            dac_time, block = self._inbox.popleft()
            if self._t0 is None or self._expected is None:
                self._start(dac_time)
            elif abs(jump := dac_time - self._expected) > RESYNC_S:
                self._resync(jump)
            self._expected = dac_time + len(block) / self._rate_in
            self._append(self._convert(block))
        self._trim()

    def _start(self, dac_time: float) -> None:
        same = self._rate_in == RATE
        self._resampler = None if same else soxr.ResampleStream(self._rate_in, RATE, 1, dtype="float32")
        self._buffer = np.zeros(0, dtype=np.float32)
        self._t0 = dac_time

    def _resync(self, jump: float) -> None:
        """The DAC timeline jumped (an underrun, a restart): later audio plays later; earlier stamps slide back."""
        assert self._t0 is not None
        self.resyncs += 1
        if 0 < jump < KEEP_S:
            self._append(np.zeros(round(jump * RATE), dtype=np.float32))
        else:
            self._t0 += jump

    def _convert(self, block: np.ndarray) -> np.ndarray:
        block = np.asarray(block, dtype=np.float32)
        if self._resampler is None:
            return block
        return np.asarray(self._resampler.resample_chunk(block), dtype=np.float32)

    def _append(self, samples: np.ndarray) -> None:
        self._buffer = np.concatenate([self._buffer, samples])

    def _trim(self) -> None:
        excess = len(self._buffer) - int(KEEP_S * RATE)
        if excess > 0 and self._t0 is not None:
            self._buffer = self._buffer[excess:]
            self._t0 += excess / RATE
