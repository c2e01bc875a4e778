"""Fixture devices with the real ones' protocols: WAV files on a timeline as the microphone, a recording sink
as the speaker, and an echo mixer that plays the speaker back into the microphone. They run on any Clock:
real time with SystemClock, or a VirtualClock, frame by frame (20 ms) as time advances.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np

from adapters.contract.clock import Clock
from audio.events import CaptureFailed
from audio.playout import REST_AFTER_S, CoreSink
from audio.ports import RATE, AudioSink, AudioSource, Frame, SegmentId
from audio.wav import load_wav, save_wav


class FileSource:
    """A microphone that hears the clips placed on its timeline (seconds after `start()`), silence elsewhere."""

    def __init__(self, clock: Clock, *, frame_s: float = 0.02, duration_s: float | None = None) -> None:
        self._clock = clock
        self._frame = round(frame_s * RATE)
        self._duration = duration_s
        self._clips: list[tuple[int, np.ndarray]] = []
        self._t0: float | None = None
        self._closed = False
        self._heard = 0  # samples delivered so far
        self.dropped = 0

    def add(self, clip: str | Path | np.ndarray, at_s: float, gain: float = 1.0) -> None:
        """Place a WAV file (any rate/channels, converted) or 16 kHz samples at `at_s` on the timeline."""
        samples = load_wav(clip) if isinstance(clip, (str, Path)) else np.asarray(clip, dtype=np.float32)
        self._clips.append((round(at_s * RATE), samples * np.float32(gain)))

    @property
    def end_s(self) -> float:
        """Where the last clip placed so far ends on the timeline (seconds after `start()`); 0 without clips."""
        return max((offset + len(clip) for offset, clip in self._clips), default=0) / RATE

    @property
    def exhausted(self) -> bool:
        """Every clip placed so far has been delivered: what comes after is silence, until another is added."""
        return self._heard >= round(self.end_s * RATE)

    @property
    def started_at(self) -> float:
        assert self._t0 is not None, "start() the source first"
        return self._t0

    async def start(self) -> None:
        self._t0 = self._clock.now()

    async def frames(self) -> AsyncIterator[Frame | CaptureFailed]:
        t0 = self.started_at
        k = 0
        while not self._closed and (self._duration is None or k * self._frame < self._duration * RATE):
            await self._clock.sleep(t0 + (k + 1) * self._frame / RATE - self._clock.now())
            if self._closed:
                return
            frame = Frame(self._mix(k * self._frame, self._frame), t0 + k * self._frame / RATE, k * self._frame)
            k += 1
            self._heard = k * self._frame
            yield frame

    def _mix(self, start: int, n: int) -> np.ndarray:
        out = np.zeros(n, dtype=np.float32)
        for offset, clip in self._clips:
            lo, hi = max(start, offset), min(start + n, offset + len(clip))
            if hi > lo:
                out[lo - start : hi - start] += clip[lo - offset : hi - offset]
        return out

    async def close(self) -> None:
        self._closed = True


UNDERRUN_BLOCKS = 2  # a block due this many blocks ago is past: a real device would have played silence


class RecordingSink(CoreSink):
    """A speaker that renders a block every `block_s`, audible `latency_s` later, and records all of it.

    Like audio.player.Player, a pause or stop silences it from the next block while what the device holds (up to
    `latency_s`) still plays: the stream never restarts. The recording stays on the clock (index / rate after
    `recording_start`).

    A block it renders too late (the loop was starved) is an underrun, as on a real device: silence, and queued
    audio goes on from the next block in time, never into the past.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        rate: int = 22050,
        block_s: float = 0.01,
        latency_s: float = 0.03,
        path: str | Path | None = None,
    ) -> None:
        super().__init__(clock, rate, max(1, round(rate * block_s)))
        self.latency_s = latency_s
        self._path = Path(path) if path is not None else None
        self._blocks: list[np.ndarray] = []
        self._task: asyncio.Task[None] | None = None
        self._t0 = 0.0
        self._k = 0  # the next block to render
        self._rest_after = max(1, round(REST_AFTER_S / block_s))
        self._wake = asyncio.Event()  # a segment was queued

    @property
    def recording_start(self) -> float:
        """Clock time at which the recording's first sample was audible."""
        return self._t0 + self.latency_s

    def recording(self) -> np.ndarray:
        return np.concatenate(self._blocks) if self._blocks else np.zeros(0, dtype=np.float32)

    async def start(self) -> None:
        self._t0 = self._clock.now()
        self._task = asyncio.create_task(self._run())

    def enqueue(self, turn: int, segment: SegmentId, samples: np.ndarray, rate: int | None = None) -> bool:
        queued = super().enqueue(turn, segment, samples, rate)
        self._wake.set()
        return queued

    def resume(self) -> None:
        super().resume()
        self._wake.set()

    async def _run(self) -> None:
        silent = 0
        while True:
            if silent >= self._rest_after and self._core.idle:
                await self._rest()
                silent = 0
            missed = self._missed(self._k)
            if missed:  # woken late (a starved loop): the device played those blocks as silence
                self._silence(missed)
            block = np.zeros(self._block, dtype=np.float32)
            filled = self._core.render(block, self._dac(self._k))  # at least one block of audio per wake: a loop
            self._blocks.append(block)  # that is always late still hears the reply, stretched by the gaps
            self._k += 1
            silent = 0 if filled or self._core.paused else silent + 1
            await self._clock.sleep(self._t0 + self._k * self.block_s - self._clock.now())

    async def _rest(self) -> None:
        """Like the Player: nothing to play for REST_AFTER_S, so no block is rendered until a segment is queued
        (a silent room costs no wake-up every 10 ms). The rest is silence in the recording, and the next block
        is the first one due from now on, as on a running device."""
        self._wake.clear()
        if self._core.idle:
            await self._wake.wait()
        self._catch_up()
        await self._clock.sleep(self._t0 + self._k * self.block_s - self._clock.now())

    def _catch_up(self) -> None:
        """Silence for every block due before now (the rest, or the time since the last block at close)."""
        due = math.ceil((self._clock.now() - self._t0) / self.block_s)
        if due > self._k:
            self._silence(due - self._k)

    def _silence(self, blocks: int) -> None:
        gap = np.zeros(blocks * self._block, dtype=np.float32)
        self._core.render_silence(gap, self._dac(self._k))
        self._blocks.append(gap)
        self._k += blocks

    def _dac(self, k: int) -> float:
        return self._t0 + k * self.block_s + self.latency_s

    def _missed(self, k: int) -> int:
        """Blocks from `k` on that were due more than UNDERRUN_BLOCKS ago: past, played as silence."""
        behind = (self._clock.now() - self._t0) / self.block_s - UNDERRUN_BLOCKS
        return max(0, math.ceil(behind) - k)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait({task})
            self._catch_up()  # the recording runs to the close, rested or not
        if self._path is not None:
            save_wav(self._path, self.recording(), self.rate)


class EchoMixer:
    """Wraps a source: each frame also hears what `sink` played, as a loudspeaker and microphone would: `gain`
    times the played signal `delay_s` earlier, through a path that is not a perfect copy (issue 12: the real
    loopback beat every guard that an exact copy never tested).

    - `jitter_s`: the delay wanders within +-jitter_s (a sound server's adaptive resampling);
    - `drift_ppm`: the speaker's clock runs this much faster than the microphone's, so the delay creeps;
    - `nonlinearity`: soft clipping of a loudspeaker driven hard (0: linear; 1: tanh at full scale);
    - `noise_db`: the room's noise floor at the microphone (dBFS; None: none);
    - `stalls`: (seconds after the first frame, seconds) - from then on the echo comes that much later (a sound
      server that stalled and has played everything later since: on a loaded PulseAudio loopback the delay went
      from 20 ms to 500 ms in a few steps).
    The delay is fractional and read by interpolation, i.e. the echo is resampled, as on a real path.
    """

    def __init__(
        self,
        source: AudioSource,
        sink: AudioSink,
        *,
        gain: float = 0.5,
        delay_s: float = 0.04,
        jitter_s: float = 0.002,
        drift_ppm: float = 200.0,
        nonlinearity: float = 0.3,
        noise_db: float | None = -70.0,
        stalls: tuple[tuple[float, float], ...] = (),
        seed: int = 12,
    ) -> None:
        self._source = source
        self._tap = sink.tap()
        self.gain = gain
        self.delay_s = delay_s
        self.jitter_s = jitter_s
        self.drift_ppm = drift_ppm
        self.nonlinearity = nonlinearity
        self.noise_db = noise_db
        self.stalls = stalls
        self._rng = np.random.default_rng(seed)
        self._wander = 0.0  # the jitter's current offset (s), a bounded random walk
        self._t0: float | None = None

    @property
    def dropped(self) -> int:
        return self._source.dropped

    async def start(self) -> None:
        await self._source.start()

    async def frames(self) -> AsyncIterator[Frame | CaptureFailed]:
        async for item in self._source.frames():
            if isinstance(item, Frame):
                item = Frame(item.samples + self._echo(item.at, len(item.samples)), item.at, item.position)
            yield item

    def _echo(self, at: float, n: int) -> np.ndarray:
        if self._t0 is None:
            self._t0 = at
        step = self.jitter_s * 0.1
        self._wander = float(np.clip(self._wander + self._rng.uniform(-step, step), -self.jitter_s, self.jitter_s))
        stalled = sum(late for after, late in self.stalls if at - self._t0 >= after)
        delay_start = self.delay_s + stalled + self._wander + self.drift_ppm * 1e-6 * (at - self._t0)
        delay_end = delay_start + self.drift_ppm * 1e-6 * n / RATE
        margin = 4
        lead = int(np.floor(delay_start * RATE)) + margin
        window = self._tap.read(at - lead / RATE, n + 2 * margin + int(np.ceil((delay_end - delay_start) * RATE)))
        if not window.any():  # nothing played: no echo to compute (a silent room costs the simulation nothing)
            echo = np.zeros(n)
        else:
            positions = lead + np.arange(n) - np.linspace(delay_start, delay_end, n, endpoint=False) * RATE
            echo = np.interp(positions, np.arange(len(window)), window) * self.gain
        if self.nonlinearity > 0:
            k = self.nonlinearity
            echo = np.tanh(k * echo) / k
        if self.noise_db is not None:
            echo = echo + self._rng.standard_normal(n) * 10 ** (self.noise_db / 20)
        return np.asarray(echo, dtype=np.float32)

    async def close(self) -> None:
        await self._source.close()
