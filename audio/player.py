"""The speaker: one sounddevice OutputStream rendering the heard-cursor core block by block.

The stream runs from `start` to `close`, rendering silence when there is nothing to play. A stream that stops and
starts again (to rest, or to drop its buffer on a stop) loses its place with PulseAudio: the server renders an
idle sink up to 2 s ahead, the restarted stream waits behind that, and PortAudio's stamps do not show it (issue
37: replies ~2 s late on a headset while the trace said 0.2-0.7 s). A running stream keeps the sink rendering
10 ms at a time, for the price of a callback every 10 ms."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from adapters.runtime.clock import SystemClock
from audio.events import AudioUnavailable, PlaybackFailed
from audio.playout import CoreSink
from audio.portaudio import DeviceInfo, resolve_device, sounddevice
from audio.ports import run_blocking
from audio.sound_server import routed
from audio.stamps import StreamClock

VOICE_RATE = 22050  # Piper en_US-joe-medium; used as the output rate when the device takes it
BLOCK_S = 0.01  # 10 ms blocks: silence within one block
# The device buffer, and with it how long a callback may wait for the GIL before the device underruns. An underrun
# on PulseAudio's ALSA plugin recreates the stream, which then waits behind the sink's render block like a restart
# (up to 2 s on an idle sink); the GIL is held for tens of ms at times while a model is set up, and 40 ms is the
# buffer a starved loop did not underrun (figures: docs/decisions/0002). A stop leaves this much and a block playing.
LATENCY_S = 0.04
# A callback this late after the one before means the device went without: a stalled sound server does not always
# say so (no output_underflow after 2 of 19 stalls of 0.4 s in test_bargein_real), and the echo of what follows
# may come up to that much later than the stamps say (ReferenceTap.underran).
CALLBACK_GAP_S = 2 * LATENCY_S
SWITCH_INTERVAL_S = 0.002  # a thread running Python hands the GIL to the callback this soon (Python's default: 5 ms)


class Player(CoreSink):
    """Plays queued segments. `stop`/`pause` silence the callback from its next block; what the device already
    holds (its latency, ~20 ms) still plays and counts as heard, so the cursor stays exact.

    Timestamps are monotonic seconds: PortAudio's DAC time is mapped onto `time.monotonic()` by audio.stamps.
    Samples given to `enqueue` at another rate (or int16) are converted there, never in the callback.
    """

    def __init__(
        self,
        device: str | int | None = None,
        *,
        rate: int = VOICE_RATE,
        latency: float | str = LATENCY_S,
        on_failure: Callable[[PlaybackFailed], None] | None = None,
    ) -> None:
        super().__init__(SystemClock(), rate, max(1, round(rate * BLOCK_S)))
        self._device = device
        self._latency = latency
        self._on_failure = on_failure
        self._stream: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self._mono = np.zeros(0, dtype=np.float32)
        self._stream_clock = StreamClock()
        self.underflows = 0
        self._called_at: float | None = None  # monotonic time of the latest callback
        self.device_name = ""

    @property
    def latency_s(self) -> float:
        """The device's output latency as PortAudio reports it."""
        return float(self._stream.latency) if self._stream is not None else 0.0

    async def start(self) -> None:
        """Open and start the stream; AudioUnavailable (one line) if the device cannot be opened."""
        self._loop = asyncio.get_running_loop()
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
        await run_blocking(self._open)

    def _open(self) -> None:
        info = resolve_device(self._device, "output")
        self.device_name = info.server_device or info.name
        with routed(info.server_device or None, "output"):  # a sound server's sink: chosen as the stream opens
            self._open_on(info)

    def _open_on(self, info: DeviceInfo) -> None:
        sd = sounddevice()
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
            raise AudioUnavailable(
                f"cannot open output device {self.device_name!r} at {self.rate} Hz: {error}"
            ) from error

    def _callback(self, outdata: np.ndarray, frames: int, times: Any, status: Any) -> None:
        now = time.monotonic()
        dac = self._stream_clock.monotonic(times.outputBufferDacTime or times.currentTime, times.currentTime, now)
        dac = max(dac, now)  # run after its DAC time (the GIL was busy): the device underran, the block plays late
        mono = self._mono if frames == len(self._mono) else np.zeros(frames, dtype=np.float32)
        self._core.render(mono, dac)
        outdata[:] = mono[:, None]
        late = self._called_at is not None and now - self._called_at > CALLBACK_GAP_S
        self._called_at = now
        if status.output_underflow or late:
            self.underflows += 1
            self._core.underran(dac)

    def _finished(self) -> None:
        if self._closing or self._loop is None:
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
