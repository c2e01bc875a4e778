"""Echo cancellation: WebRTC's audio processing module (via the `livekit` package) in 10 ms frames.

The playback reference comes from a ReferenceTap, read on the microphone's timeline (both are stamped in
clock seconds), `lead_ms` ahead; the module is told that lead as its stream delay and its own delay
estimator finds the rest of the acoustic path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from audio.events import EchoCancellerUnavailable
from audio.ports import RATE, Frame, ReferenceReader

CHUNK = RATE // 100  # 10 ms, the only frame size the module takes
ECHO_TAIL_S = 0.5  # after this long without playback the room's echo has died away and the module idles
RETRY_S = 2.0  # a module that failed is made anew after this much audio


def _to_pcm(samples: np.ndarray) -> np.ndarray:
    return np.clip(np.round(samples * 32767.0), -32768, 32767).astype(np.int16)


class EchoCanceller:
    """Frames in, cleaned frames out (in 10 ms steps, so a frame may come out split or held back a little).

    With `enabled=False` it passes audio through untouched, which the tests use to show the echo it removes.
    A module that raises mid-stream is dropped (audio passes through, `failure` says why) and made anew after
    RETRY_S; `failure` is None again once the new one runs.
    """

    def __init__(
        self,
        reference: ReferenceReader | None,
        *,
        enabled: bool = True,
        lead_ms: int = 0,
        noise_suppression: bool = False,
    ) -> None:
        self.enabled = enabled and reference is not None
        self._reference = reference
        self._lead_ms = lead_ms
        self._pending = np.zeros(0, dtype=np.float32)
        self._pending_at = 0.0
        self._position = 0
        self._quiet_s = 0.0  # seconds since the reference last carried sound
        self._noise_suppression = noise_suppression
        self._apm: Any = None
        self._frame_type: Any = None
        self.failure: str | None = None
        self._retry_in = 0.0
        if self.enabled:
            try:
                from livekit import rtc
            except ImportError as error:
                raise EchoCancellerUnavailable(
                    "echo cancellation needs the `livekit` package (pip install livekit), or switch it off"
                ) from error
            self._frame_type = rtc.AudioFrame
            self._apm = self._module()

    @property
    def idle(self) -> bool:
        """Nothing has played for longer than the echo lasts."""
        return self._quiet_s > ECHO_TAIL_S

    @property
    def has_reference(self) -> bool:
        return self._reference is not None

    def _module(self) -> Any:
        from livekit import rtc

        return rtc.AudioProcessingModule(
            echo_cancellation=True, noise_suppression=self._noise_suppression, high_pass_filter=True
        )

    def process(self, frame: Frame) -> list[Frame]:
        if not self.enabled:
            return [frame]
        if len(self._pending) == 0:
            self._pending_at = frame.at
            if self._position == 0:
                self._position = frame.position
        self._pending = np.concatenate([self._pending, frame.samples])
        usable = len(self._pending) // CHUNK * CHUNK
        if usable == 0:
            return []
        block, self._pending = self._pending[:usable], self._pending[usable:]
        at = self._pending_at
        cleaned = np.concatenate([self._chunk(block[i : i + CHUNK], at + i / RATE) for i in range(0, usable, CHUNK)])
        out = Frame(cleaned, at, self._position)
        self._position += usable
        self._pending_at = at + usable / RATE
        return [out]

    @property
    def underrun_at(self) -> float | None:
        """When the output last underran (None: never, or no reference): its echo may come later from then on."""
        return self._reference.underrun_at if self._reference is not None else None

    def played(self, at: float, n: int) -> np.ndarray:
        """The n reference samples that were audible from clock time `at` (silence without a reference)."""
        if self._reference is None:
            return np.zeros(n, dtype=np.float32)
        return self._reference.read(at + self._lead_ms / 1000.0, n)

    def _chunk(self, mic: np.ndarray, at: float) -> np.ndarray:
        far = self.played(at, CHUNK)
        if np.any(far):
            self._quiet_s = 0.0
        else:
            self._quiet_s += CHUNK / RATE
            if self._quiet_s > ECHO_TAIL_S:
                return mic  # nothing played lately: no echo to remove, so spare the CPU
        if self._apm is None and not self._recover():
            return mic
        try:
            return self._cancel(far, mic)
        except Exception as error:  # the native module raises its own untyped errors  # noqa: BLE001
            self.failure = (str(error).splitlines() or [type(error).__name__])[0][:200]
            self._apm, self._retry_in = None, RETRY_S
            return mic

    def _cancel(self, far: np.ndarray, mic: np.ndarray) -> np.ndarray:
        reverse = self._frame_type(_to_pcm(far).tobytes(), RATE, 1, CHUNK)
        self._apm.process_reverse_stream(reverse)
        near = self._frame_type(_to_pcm(mic).tobytes(), RATE, 1, CHUNK)
        self._apm.set_stream_delay_ms(self._lead_ms)
        self._apm.process_stream(near)
        self.failure = None
        return np.frombuffer(bytes(near.data), dtype=np.int16).astype(np.float32) / 32768.0

    def _recover(self) -> bool:
        """After a failure: wait RETRY_S of audio, then try a new module."""
        self._retry_in -= CHUNK / RATE
        if self._retry_in > 0:
            return False
        try:
            self._apm = self._module()
        except Exception as error:  # noqa: BLE001
            self.failure = (str(error).splitlines() or [type(error).__name__])[0][:200]
            self._retry_in = RETRY_S
            return False
        return True
