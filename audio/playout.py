"""The heard cursor: a segment queue rendered block by block, shared by the real player and the fixture sink.

`render` runs on the audio thread (PortAudio's callback, or the fixture's ticking task); everything else runs on
the event loop. They share one short lock, held for a few list operations, never across I/O or allocation of note.
"""

from __future__ import annotations

import collections
import threading

import numpy as np

from adapters.contract.clock import Clock
from adapters.runtime.pcm import resample, to_mono_float32
from audio.events import PlaybackFailed
from audio.levels import within_ceiling
from audio.ports import SegmentId, SegmentProgress
from audio.tap import ReferenceTap

REST_AFTER_S = 2.0  # of blocks with nothing to play: then a speaker stops until a segment is queued


class _Segment:
    __slots__ = ("handed", "key", "marks", "order", "samples", "turn")

    def __init__(self, turn: int, key: SegmentId, samples: np.ndarray, order: int) -> None:
        self.order = order
        self.turn = turn
        self.key = key
        self.samples = samples
        self.handed = 0  # samples given to the device
        self.marks: list[tuple[float, int, int]] = []  # (DAC time, first sample, count) per block


class PlayoutCore:
    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._lock = threading.Lock()
        self._queue: collections.deque[_Segment] = collections.deque()
        self._segments: dict[int, dict[SegmentId, _Segment]] = {}
        self._stopped: set[int] = set()
        self._paused = False
        self._taps: list[ReferenceTap] = []
        self._order = 0
        self.last_dac_end = 0.0  # DAC time at which the last rendered block ends

    # -- the audio thread ------------------------------------------------------------------------------
    def render(self, out: np.ndarray, dac_time: float) -> int:
        """Fill `out` (mono float32) with the next block; `dac_time` is when its first sample is audible. Returns
        how many of its samples are audio (0: silence, nothing was queued or the output is paused)."""
        n = len(out)
        out[:] = 0.0
        with self._lock:
            filled = 0
            while not self._paused and filled < n and self._queue:
                segment = self._queue[0]
                take = min(n - filled, len(segment.samples) - segment.handed)
                out[filled : filled + take] = segment.samples[segment.handed : segment.handed + take]
                segment.marks.append((dac_time + filled / self.rate, segment.handed, take))
                segment.handed += take
                filled += take
                if segment.handed >= len(segment.samples):
                    self._queue.popleft()
            self.last_dac_end = dac_time + n / self.rate
            taps = self._taps
        for tap in taps:
            tap.push(dac_time, out)
        return filled

    def render_silence(self, out: np.ndarray, dac_time: float) -> None:
        """An underrun: the device played `out` as silence from `dac_time`; the queue waits for the next block."""
        out[:] = 0.0
        with self._lock:
            self.last_dac_end = dac_time + len(out) / self.rate
            taps = self._taps
        for tap in taps:
            tap.push(dac_time, out)

    def underran(self, dac_time: float) -> None:
        """The device ran dry before the block audible at `dac_time`: its taps are told (ReferenceTap.underran)."""
        with self._lock:
            taps = self._taps
        for tap in taps:
            tap.underran(dac_time)

    # -- the event loop --------------------------------------------------------------------------------
    def add_tap(self, tap: ReferenceTap) -> None:
        with self._lock:
            self._taps = [*self._taps, tap]

    def enqueue(self, turn: int, key: SegmentId, samples: np.ndarray) -> bool:
        with self._lock:
            self._order += 1
            segment = _Segment(turn, key, np.ascontiguousarray(samples, dtype=np.float32), self._order)
            if turn in self._stopped:
                return False
            self._segments.setdefault(turn, {})[key] = segment
            self._queue.append(segment)
        return True

    def stop(self, turn: int) -> dict[SegmentId, float]:
        """Silence the turn from the next block; returns per segment the ms handed out (all of it will be heard)."""
        with self._lock:
            self._stopped.add(turn)
            self._queue = collections.deque(s for s in self._queue if s.turn != turn)
            return {key: s.handed * 1000.0 / self.rate for key, s in self._segments.get(turn, {}).items()}

    def discard(self, turn: int, keys: list[SegmentId]) -> None:
        drop = set(keys)
        with self._lock:
            self._queue = collections.deque(s for s in self._queue if not (s.turn == turn and s.key in drop))

    def release(self, turn: int) -> None:
        with self._lock:
            self._queue = collections.deque(s for s in self._queue if s.turn != turn)
            self._segments.pop(turn, None)

    def set_paused(self, paused: bool) -> None:
        with self._lock:
            self._paused = paused

    def silent_from(self, now: float) -> float:
        """When the blocks rendered so far have played out (what follows a pause or stop is silence)."""
        with self._lock:
            return max(now, self.last_dac_end)

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def idle(self) -> bool:
        """Nothing queued and not paused: the output has nothing to play, now or on a resume."""
        with self._lock:
            return not self._queue and not self._paused

    def played_ms(self, turn: int, key: SegmentId, now: float) -> float:
        """Heard by `now`; for a stopped turn, all that was handed out: the device plays what it holds, so a reply
        closed at once after its stop keeps the word still sounding in it."""
        with self._lock:
            segment = self._segments.get(turn, {}).get(key)
            if segment is None:
                return 0.0
            played = segment.handed if turn in self._stopped else self._played(segment, now)
            return played * 1000.0 / self.rate

    def progress(self, turn: int, now: float) -> dict[SegmentId, SegmentProgress]:
        with self._lock:
            return {
                key: SegmentProgress(
                    duration_ms=len(s.samples) * 1000.0 / self.rate,
                    handed_ms=s.handed * 1000.0 / self.rate,
                    played_ms=self._played(s, now) * 1000.0 / self.rate,
                )
                for key, s in self._segments.get(turn, {}).items()
            }

    def pending_s(self, turn: int, now: float) -> float | None:
        """Seconds until everything queued for `turn` has reached the DAC; None when it all has."""
        with self._lock:
            queued = sum(len(s.samples) - s.handed for s in self._queue if s.turn == turn)
            segments = self._segments.get(turn, {}).values()
            last = max((m[0] + m[2] / self.rate for s in segments for m in s.marks[-1:]), default=now)
        if queued == 0 and last <= now:
            return None
        return max(last - now, 0.0) + queued / self.rate

    def audible_at(self, turn: int, key: SegmentId, sample: int) -> float | None:
        """The DAC time at which `sample` of the segment was (or will be) audible; None if it was never handed out."""
        with self._lock:
            segment = self._segments.get(turn, {}).get(key)
            marks = list(segment.marks) if segment is not None else []
        for dac, first, count in marks:
            if first <= sample < first + count:
                return dac + (sample - first) / self.rate
        return None

    def _played(self, segment: _Segment, now: float) -> int:
        for dac, first, count in reversed(segment.marks):
            if dac <= now:
                return first + min(count, int((now - dac) * self.rate))
        return 0


class CoreSink:
    """The sink API over a PlayoutCore; subclasses decide who calls `render` and what `now` is."""

    def __init__(self, clock: Clock, rate: int, block: int) -> None:
        self._clock = clock
        self._core = PlayoutCore(rate)
        self._block = block
        self._failure: PlaybackFailed | None = None

    @property
    def rate(self) -> int:
        return self._core.rate

    @property
    def block_s(self) -> float:
        return self._block / self._core.rate

    @property
    def failure(self) -> PlaybackFailed | None:
        return self._failure

    def tap(self) -> ReferenceTap:
        """A new reader of what is played (for the echo canceller or an echo mixer)."""
        tap = ReferenceTap(self._core.rate)
        self._core.add_tap(tap)
        return tap

    def enqueue(self, turn: int, segment: SegmentId, samples: np.ndarray, rate: int | None = None) -> bool:
        """Queue a segment (float32 or int16, at `rate` or the sink's); False when the turn was stopped. Its peak
        is kept at CEILING_DBFS: what is played never reaches full scale."""
        audio = to_mono_float32(samples)
        if rate is not None and rate != self._core.rate:
            audio = resample(audio, rate, self._core.rate)
        return self._core.enqueue(turn, segment, within_ceiling(audio))

    def stop(self, turn: int) -> dict[SegmentId, float]:
        """Silence the turn from the next block: returns per segment the ms that reach the listener (exact: what
        the device already holds plays out, the rest is dropped). The stream never stops for it (audio.player)."""
        return self._core.stop(turn)

    def pause(self) -> float:
        """Go silent from the next block, keeping the position: `resume` goes on from the first sample unheard.
        Returns when the output is silent (clock): once what the device holds has played out."""
        self._core.set_paused(True)
        return self._core.silent_from(self._clock.now())

    def resume(self) -> None:
        self._core.set_paused(False)

    def played_ms(self, turn: int, segment: SegmentId) -> float:
        return self._core.played_ms(turn, segment, self._clock.now())

    def audible_at(self, turn: int, segment: SegmentId, at_ms: float) -> float | None:
        """When the segment's audio `at_ms` in was audible (clock seconds), or None if it never played."""
        return self._core.audible_at(turn, segment, round(at_ms * self.rate / 1000))

    def progress(self, turn: int) -> dict[SegmentId, SegmentProgress]:
        return self._core.progress(turn, self._clock.now())

    def discard(self, turn: int, segments: list[SegmentId]) -> None:
        self._core.discard(turn, segments)

    def release(self, turn: int) -> None:
        self._core.release(turn)

    async def drain(self, turn: int) -> None:
        """Return once all of `turn`'s queued audio reached the DAC (or the device failed)."""
        while self._failure is None:
            pending = self._core.pending_s(turn, self._clock.now())
            if pending is None:
                return
            wait = self.block_s if self._core.paused else max(pending, self.block_s / 2)
            await self._clock.sleep(wait)
