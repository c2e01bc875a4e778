"""The microphone: a sounddevice InputStream whose callback never blocks, feeding 16 kHz frames to asyncio."""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import soxr

from audio.events import AudioUnavailable, CaptureFailed
from audio.portaudio import DeviceInfo, resolve_device, sounddevice
from audio.ports import RATE, Frame, run_blocking
from audio.sound_server import routed
from audio.stamps import StreamClock

log = logging.getLogger(__name__)
STALL_S = 1.0  # no audio for this long while running is a failure, not a wait
RESYNC_S = 0.2  # ADC stamps this far off the sample clock re-anchor it (smaller jitter would upset the AEC)


class FrameQueue:
    """Bounded hand-over from a foreign thread to the loop: `put` never blocks; overflow drops the oldest."""

    def __init__(self, loop: asyncio.AbstractEventLoop, maxlen: int) -> None:
        self._loop = loop
        self._items: collections.deque[Any] = collections.deque(maxlen=maxlen)
        self._wake = asyncio.Event()
        self._wake_pending = False
        self._batch = 1
        self.dropped = 0
        self.last_put = time.monotonic()

    def put(self, item: Any) -> None:
        """From any thread: an append and, at most once per wake-up, a call_soon_threadsafe."""
        self.last_put = time.monotonic()
        if len(self._items) == self._items.maxlen:
            self.dropped += 1
        self._items.append(item)
        if len(self._items) >= self._batch:
            self.wake()

    def pace(self, items: int) -> None:
        """Wake the reader once `items` are queued (1: at every put). On the loop's thread; what is queued already
        is handed over at once if it is enough, so going back to 1 never strands a frame."""
        self._batch = max(1, items)
        if len(self._items) >= self._batch:
            self.wake()

    def wake(self) -> None:
        if self._wake_pending:
            return
        self._wake_pending = True
        try:
            self._loop.call_soon_threadsafe(self._wake.set)
        except RuntimeError:  # loop closed: nobody will read
            pass

    @property
    def empty(self) -> bool:
        return not self._items

    async def get(self) -> Any | None:
        """The next item, or None once woken with nothing queued (a failure or close happened)."""
        while not self._items:
            self._wake.clear()
            self._wake_pending = False
            if self._items:
                break
            await self._wake.wait()
            if not self._items:
                return None
        return self._items.popleft()


class Microphone:
    """Captures mono audio from a device (by name, index or the default) as 16 kHz float32 Frames.

    The device runs at 16 kHz when it can; otherwise at its own rate, resampled once on the loop side.
    A failing device ends `frames()` with a CaptureFailed item; `start()` raises AudioUnavailable.
    """

    def __init__(
        self,
        device: str | int | None = None,
        *,
        block_s: float = 0.02,
        max_frames: int = 100,
        latency: float | str = "low",
        stall_s: float = STALL_S,
    ) -> None:
        self._device = device
        self._block_s = block_s
        self._max_frames = max_frames
        self._latency = latency
        self._stall_s = stall_s
        self._stream: Any = None
        self._queue: FrameQueue | None = None
        self._resampler: soxr.ResampleStream | None = None
        self._failure: CaptureFailed | None = None
        self._closing = False
        self._position = 0
        self._anchor_at = 0.0
        self._anchor_position = 0
        self.resyncs = 0
        self._stream_clock = StreamClock()
        self._dropped_seen = 0
        self.rate = RATE
        self.device_rate = RATE
        self.device_name = ""
        self.overflows = 0

    @property
    def dropped(self) -> int:
        return self._queue.dropped if self._queue is not None else 0

    def pace(self, frames: int) -> None:
        """Hand frames to the loop `frames` at a time: a few in a silent room (each wake-up of the loop costs more
        than the frame it brings), one at a time whenever a reply or a voice needs them at once."""
        if self._queue is not None:
            self._queue.pace(frames)

    async def start(self) -> None:
        self._queue = FrameQueue(asyncio.get_running_loop(), self._max_frames)
        await run_blocking(self._open)

    def _open(self) -> None:
        info = resolve_device(self._device, "input")
        self.device_name = info.server_device or info.name
        with routed(info.server_device or None, "input"):  # a sound server's source: chosen as the stream opens
            self._open_on(info)

    def _open_on(self, info: DeviceInfo) -> None:
        sd = sounddevice()
        try:
            sd.check_input_settings(device=info.index, samplerate=RATE, channels=1, dtype="float32")
        except sd.PortAudioError:
            self.device_rate = round(info.default_rate)
            self._resampler = soxr.ResampleStream(self.device_rate, RATE, 1, dtype="float32")
        try:
            self._stream = sd.InputStream(
                device=info.index,
                samplerate=self.device_rate,
                channels=1,
                dtype="float32",
                blocksize=round(self.device_rate * self._block_s),
                latency=self._latency,
                callback=self._callback,
                finished_callback=self._finished,
            )
            self._stream.start()
        except sd.PortAudioError as error:
            raise AudioUnavailable(f"cannot open input device {self.device_name!r}: {error}") from error

    def _callback(self, indata: np.ndarray, frames: int, times: Any, status: Any) -> None:
        at = self._stream_clock.monotonic(times.inputBufferAdcTime or times.currentTime, times.currentTime)
        if status.input_overflow:
            self.overflows += 1
        assert self._queue is not None
        self._queue.put((indata[:, 0].copy(), at, bool(status.input_overflow)))

    def _finished(self) -> None:
        if not self._closing and self._queue is not None:
            self._failure = CaptureFailed("the input device stopped (unplugged, taken away or the sound server quit)")
            self._queue.wake()

    async def frames(self) -> AsyncIterator[Frame | CaptureFailed]:
        """Frames in capture order; ends after a CaptureFailed, or quietly after close()."""
        assert self._queue is not None, "start() the microphone first"
        while not self._closing:
            try:
                async with asyncio.timeout(self._stall_s):
                    item = await self._queue.get()
            except TimeoutError:
                item = None
                if not self._device_quiet():
                    continue  # the loop was busy (a model loading), not the device: its audio is queued
                if self._failure is None and not self._closing:
                    self._failure = CaptureFailed(f"no audio from the input device for {self._stall_s:g} s")
            if item is not None:
                block, at, overflowed = item
                dropped, self._dropped_seen = self._queue.dropped - self._dropped_seen, self._queue.dropped
                frame = self._frame(block, at, lost=overflowed or dropped > 0)
                if frame is not None:
                    yield frame
            elif self._failure is not None and not self._closing:
                yield self._failure
                return

    def _device_quiet(self) -> bool:
        """No audio from the device itself for the stall time (the loop's own waits prove nothing)."""
        queue = self._queue
        return queue is None or (queue.empty and time.monotonic() - queue.last_put >= self._stall_s)

    def _frame(self, block: np.ndarray, at: float, *, lost: bool = False) -> Frame | None:
        """`lost`: audio before this block never reached us (an overflow, a full queue), so the sample clock
        no longer tells its time: its own stamp does. Carried on, a loss under RESYNC_S would leave every later
        frame that much early for good, and the echo before its reference (issue 12)."""
        if self._resampler is not None:
            converted = np.asarray(self._resampler.resample_chunk(block), dtype=np.float32)
            at += len(block) / self.device_rate - len(converted) / RATE  # the output ends where the input ended
            block = converted
        if len(block) == 0:
            return None
        # stamps follow the sample clock; the callback's jittery ADC times only re-anchor it on a real jump
        predicted = self._anchor_at + (self._position - self._anchor_position) / RATE
        if self._position == 0 or lost or abs(at - predicted) > RESYNC_S:
            log.debug("microphone re-anchored: stamp %.3f s off the sample clock", at - predicted)
            self._anchor_at, self._anchor_position = at, self._position
            self.resyncs += 1
        else:
            at = predicted
        frame = Frame(block, at, self._position)
        self._position += len(block)
        return frame

    async def close(self) -> None:
        self._closing = True
        stream, self._stream = self._stream, None
        if self._queue is not None:
            self._queue.wake()
        if stream is not None:
            await run_blocking(lambda: (stream.abort(ignore_errors=True), stream.close(ignore_errors=True)))
