"""The speaker: one sounddevice OutputStream rendering the heard-cursor core block by block.

The stream rests (is stopped) once it has had nothing to play for REST_AFTER_S, and starts again when a segment
is queued: a running stream costs a callback, and the sound server's wake-ups, every 10 ms of a silent room."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from audio.devices import resolve_device, sounddevice
from audio.events import AudioUnavailable, PlaybackFailed
from audio.playout import REST_AFTER_S, CoreSink
from audio.ports import SegmentId, SystemClock, run_blocking
from audio.stamps import StreamClock

VOICE_RATE = 22050  # Piper en_US-joe-medium; used as the output rate when the device takes it
BLOCK_S = 0.01  # 10 ms blocks: silence within one block, and ~20 ms of device buffer on PulseAudio


class Player(CoreSink):
    """Plays queued segments. `stop`/`pause` silence the callback from its next block and also abort-and-restart
    the stream, so what the device buffered but had not played is dropped: silence at once, and the cursor is exact.

    Timestamps are monotonic seconds: PortAudio's DAC time is mapped onto `time.monotonic()` by audio.stamps.
    Samples given to `enqueue` at another rate (or int16) are converted there, never in the callback.
    """

    def __init__(
        self,
        device: str | int | None = None,
        *,
        rate: int = VOICE_RATE,
        latency: float | str = "low",
        on_failure: Callable[[PlaybackFailed], None] | None = None,
    ) -> None:
        super().__init__(SystemClock(), rate, max(1, round(rate * BLOCK_S)))
        self._device = device
        self._latency = latency
        self._on_failure = on_failure
        self._stream: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self._flushing = False
        self._resting = False  # stopped for want of anything to play (not a failure): `enqueue` starts it
        self._silent_blocks = 0  # blocks rendered in a row with nothing to play (the audio thread's count)
        self._rest_after = max(1, round(REST_AFTER_S / BLOCK_S))
        self._mono = np.zeros(0, dtype=np.float32)
        self._stream_clock = StreamClock()
        self.underflows = 0
        self.device_name = ""

    @property
    def latency_s(self) -> float:
        """The device's output latency as PortAudio reports it."""
        return float(self._stream.latency) if self._stream is not None else 0.0

    @property
    def resting(self) -> bool:
        """The stream is stopped for want of anything to play; the next segment queued starts it."""
        return self._resting

    async def start(self) -> None:
        """Open and start the stream; AudioUnavailable (one line) if the device cannot be opened."""
        self._loop = asyncio.get_running_loop()
        await run_blocking(self._open)

    def _open(self) -> None:
        sd = sounddevice()
        info = resolve_device(self._device, "output")
        self.device_name = info.name
        channels = 1
        try:
            sd.check_output_settings(device=info.index, samplerate=self.rate, channels=1, dtype="float32")
        except sd.PortAudioError:
            channels = min(2, info.outputs)
        self._mono = np.zeros(self._block, dtype=np.float32)
        try:
            self._stream = sd.OutputStream(
                device=info.index,
                samplerate=self.rate,
                channels=channels,
                dtype="float32",
                blocksize=self._block,
                latency=self._latency,
                callback=self._callback,
                finished_callback=self._finished,
            )
            self._stream.start()
        except sd.PortAudioError as error:
            raise AudioUnavailable(f"cannot open output device {info.name!r} at {self.rate} Hz: {error}") from error

    def _callback(self, outdata: np.ndarray, frames: int, times: Any, status: Any) -> None:
        now = time.monotonic()
        dac = self._stream_clock.monotonic(times.outputBufferDacTime or times.currentTime, times.currentTime, now)
        dac = max(dac, now)  # run after its DAC time (the GIL was busy): the device underran, the block plays late
        mono = self._mono if frames == len(self._mono) else np.zeros(frames, dtype=np.float32)
        filled = self._core.render(mono, dac)
        outdata[:] = mono[:, None]
        if status.output_underflow:
            self.underflows += 1
        self._silent_blocks = 0 if filled or self._core.paused else self._silent_blocks + 1
        if self._silent_blocks == self._rest_after and self._loop is not None:
            self._loop.call_soon_threadsafe(self._rest)

    def enqueue(self, turn: int, segment: SegmentId, samples: np.ndarray, rate: int | None = None) -> bool:
        queued = super().enqueue(turn, segment, samples, rate)
        if queued and self._resting:
            self._wake()
        return queued

    def _rest(self) -> None:
        """Stop the stream while there is nothing to play (on the loop, so no segment is queued meanwhile)."""
        stream = self._stream
        if stream is None or self._closing or self._resting or not stream.active or not self._core.idle:
            return
        self._resting = True
        stream.abort(ignore_errors=True)

    def _wake(self) -> None:
        self._resting, self._silent_blocks = False, 0
        if self._stream is None:
            return
        try:
            self._stream.start()
        except sounddevice().PortAudioError as error:
            self._fail(PlaybackFailed(f"the output device could not start again: {error}"))

    def _flush(self) -> None:
        """Abort (PortAudio drops the device buffer, <1 ms on PulseAudio), rewind to the DAC, start again."""
        stream = self._stream
        if stream is None or not stream.active:
            super()._flush()
            return
        self._flushing = True
        try:
            stream.abort(ignore_errors=True)
            super()._flush()
            stream.start()
        except sounddevice().PortAudioError as error:
            self._fail(PlaybackFailed(f"the output device could not restart: {error}"))
        finally:
            self._flushing = False

    def _finished(self) -> None:
        if self._closing or self._flushing or self._resting or self._loop is None:
            return
        failure = PlaybackFailed("the output device stopped (unplugged, taken away or the sound server quit)")
        try:
            self._loop.call_soon_threadsafe(self._fail, failure)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            self._failure = failure

    def _fail(self, failure: PlaybackFailed) -> None:
        if self._failure is None:
            self._failure = failure
            if self._on_failure is not None:
                self._on_failure(failure)

    async def close(self) -> None:
        """Stop and close the stream; returns once PortAudio's thread has finished."""
        self._closing = True
        stream, self._stream = self._stream, None
        if stream is not None:
            await run_blocking(lambda: _close(stream))


def _close(stream: Any) -> None:
    stream.abort(ignore_errors=True)
    stream.close(ignore_errors=True)
