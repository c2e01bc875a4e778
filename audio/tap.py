"""The playback reference tap: what the speaker played, with DAC timestamps, read back on the mic's timeline.

Every block sits where its DAC stamp says, not merely after the block before: a stream restarted after a pause
or stop drops what the device buffered (~25 ms on PulseAudio), and appending regardless would shift the
reference later by that much on every barge-in until the echo comes *before* its reference and the canceller
cannot remove it (issue 12). Stamp jitter below JITTER_S is the sample clock's, and is appended as is; a slow
clock drift is followed in small steps. A gap (an underrun) or an overlap in a running stream moves the write
position without restarting the resampler: on a busy machine that happens many times a second, and restarting a
resampler each time cost the event loop more than the audio it tapped (the listener fell seconds behind).
"""

from __future__ import annotations

import collections
import logging

import numpy as np
import soxr

from audio.ports import RATE

log = logging.getLogger(__name__)
KEEP_S = 3.0  # how much played audio stays readable
JITTER_S = 0.004  # a stamp this far off the sample clock is placed where it says (a restart, an underrun)
DRIFT_STEP = 16  # samples (1 ms): a sample clock that drifts from the stamps is corrected this much at a time
DRIFT_ALPHA = 0.05  # smoothing of the stamp error that tells drift from jitter


class _Samples:
    """A float32 buffer that grows at its end and is trimmed at its head without copying it each time."""

    def __init__(self) -> None:
        self._data = np.zeros(1 << 16, dtype=np.float32)
        self._start = 0
        self._end = 0

    def __len__(self) -> int:
        return self._end - self._start

    @property
    def view(self) -> np.ndarray:
        return self._data[self._start : self._end]

    def append(self, samples: np.ndarray) -> None:
        n = len(samples)
        if self._end + n > len(self._data):
            kept = self.view.copy()
            self._data = np.zeros(max(len(self._data), 2 * (len(kept) + n)), dtype=np.float32)
            self._data[: len(kept)] = kept
            self._start, self._end = 0, len(kept)
        self._data[self._end : self._end + n] = samples
        self._end += n

    def fit(self, length: int) -> None:
        """Cut to `length` samples, or pad to it with silence."""
        if length <= len(self):
            self._end = self._start + length
        else:
            self.append(np.zeros(length - len(self), dtype=np.float32))

    def drop_head(self, count: int) -> None:
        self._start += min(count, len(self))

    def clear(self) -> None:
        self._start = self._end = 0


class ReferenceTap:
    """Filled from the playback thread (`push`, `cut`: lock-free deque appends), read on the loop (`read`).

    `read(at, n)` returns the n samples (16 kHz) that were audible from clock time `at`; silence where
    nothing was played or the history is gone.
    """

    def __init__(self, rate_in: int, max_blocks: int = 1000) -> None:
        self._rate_in = rate_in
        self._inbox: collections.deque[tuple[float, np.ndarray | None]] = collections.deque(maxlen=max_blocks)
        self._resampler: soxr.ResampleStream | None = None
        self._buffer = _Samples()
        self._t0: float | None = None  # clock time of self._buffer[0]
        self._stream_at = 0  # buffer index where the resampler's output starts
        self._fed = 0  # input samples given to the resampler since it started
        self._drift = 0.0  # smoothed stamp error (seconds, + = the stamps run later than the samples)
        self._streaming = False  # blocks follow each other on the sample clock
        self.resyncs = 0
        self.streams = 0  # resampler streams started (one per restart of the output, not per gap)
        self.underrun_at: float | None = None  # clock time of the output's latest underrun

    def underran(self, at: float) -> None:
        """From the audio thread: the device ran dry just before `at`. A sound server that fell behind (issue 36:
        PulseAudio stalled 0.2-0.4 s) then plays everything after it up to that much later than the stamps say,
        and the stamps do not show it: what was played is still right here, but its echo may come later."""
        self.underrun_at = at

    def push(self, dac_time: float, block: np.ndarray) -> None:
        """From the audio thread: one small copy and a deque append, nothing else."""
        self._inbox.append((dac_time, block.copy()))

    def cut(self, at: float) -> None:
        """From any thread: the device dropped what it held: nothing stamped from `at` on was heard."""
        self._inbox.append((at, None))

    def read(self, at: float, n: int) -> np.ndarray:
        self._drain()
        out = np.zeros(n, dtype=np.float32)
        if self._t0 is None:
            return out
        start = round((at - self._t0) * RATE)
        lo, hi = max(start, 0), min(start + n, len(self._buffer))
        if hi > lo:
            out[lo - start : hi - start] = self._buffer.view[lo:hi]
        return out

    @property
    def end(self) -> float | None:
        """Clock time up to which the reference is known (None before anything played)."""
        self._drain()
        return None if self._t0 is None else self._t0 + len(self._buffer) / RATE

    def _drain(self) -> None:
        while self._inbox:
            dac_time, block = self._inbox.popleft()
            if block is None:
                self._cut(dac_time)
            elif self._t0 is None:
                self._t0 = dac_time
                self._restart(0)
                self._feed(block)
            else:
                self._place(dac_time, block)
                self._feed(block)
        self._trim()

    def _place(self, dac_time: float, block: np.ndarray) -> None:
        assert self._t0 is not None
        expected = self._t0 + (self._stream_at + self._fed * RATE / self._rate_in) / RATE
        error = dac_time - expected
        if not self._streaming or abs(error) > KEEP_S:
            self._resync(dac_time)
        elif abs(error) > JITTER_S:
            self._shift(error)
        else:
            self._follow(error)

    def _follow(self, error: float) -> None:
        """Sample clock vs stamps: jitter averages out, a drift builds up and moves the stream a step."""
        self._drift += DRIFT_ALPHA * (error - self._drift)
        if abs(self._drift) >= DRIFT_STEP / RATE:
            step = DRIFT_STEP if self._drift > 0 else -DRIFT_STEP
            assert self._t0 is not None
            self._t0 += step / RATE  # the same samples, `step` later on the clock
            self._drift -= step / RATE

    def _shift(self, error: float) -> None:
        """A gap (silence) or an overlap (the later block wins) in a running stream; the resampler runs on, so
        the few samples it holds back land that much off, a millisecond or two."""
        self.resyncs += 1
        samples = round(error * RATE)
        if samples < 0:
            samples = -min(-samples, len(self._buffer))
        self._buffer.fit(len(self._buffer) + samples)
        self._stream_at += samples

    def _resync(self, dac_time: float) -> None:
        """Close the running stream and start the next one where `dac_time` falls (gap: silence)."""
        assert self._t0 is not None
        self.resyncs += 1
        self._finish_stream()
        position = round((dac_time - self._t0) * RATE)
        if position - len(self._buffer) > KEEP_S * RATE or position < 0:
            self._buffer.clear()
            self._t0, position = dac_time, 0
        self._buffer.fit(position)
        self._restart(position)

    def _cut(self, at: float) -> None:
        if self._t0 is None:
            return
        self._finish_stream()
        self._buffer.fit(min(len(self._buffer), max(0, round((at - self._t0) * RATE))))
        self._streaming = False  # the next block starts a new stream where its stamp says

    def _restart(self, position: int) -> None:
        same = self._rate_in == RATE
        self.streams += 1
        self._resampler = None if same else soxr.ResampleStream(self._rate_in, RATE, 1, dtype="float32")
        self._stream_at, self._fed, self._drift, self._streaming = position, 0, 0.0, True

    def _finish_stream(self) -> None:
        if self._resampler is not None:
            tail = self._resampler.resample_chunk(np.zeros(0, dtype=np.float32), last=True)
            self._append(np.asarray(tail, dtype=np.float32))
            self._resampler = None

    def _feed(self, block: np.ndarray) -> None:
        block = np.asarray(block, dtype=np.float32)
        self._fed += len(block)
        if self._resampler is None:
            self._append(block)
        else:
            self._append(np.asarray(self._resampler.resample_chunk(block), dtype=np.float32))

    def _append(self, samples: np.ndarray) -> None:
        self._buffer.append(samples)

    def _trim(self) -> None:
        excess = len(self._buffer) - int(KEEP_S * RATE)
        if excess > 0 and self._t0 is not None:
            self._buffer.drop_head(excess)
            self._t0 += excess / RATE
            self._stream_at -= excess
