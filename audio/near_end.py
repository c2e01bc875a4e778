"""What the VAD and Whisper hear: the echo canceller's output, or the microphone itself where no echo is left to
remove (the listener says where: audio.listen).

WebRTC's canceller dims the near end for a while after the echo under it has stopped (double talk). On the
PulseAudio loopback, "What is two plus two?" said over a loud reply (paused at its onset) came out of it 10-40 dB
down for up to 0.2 s after the echo ended, and the VAD and Whisper lost words there (issue 36). The canceller's
own output stays the evidence of what is echo (audio.listen).
"""

from __future__ import annotations

import collections

import numpy as np

from audio.echo_path import CHUNK
from audio.ports import RATE, Frame

FADE = (np.arange(CHUNK, dtype=np.float32) + 0.5) / CHUNK  # the switch is cross-faded over one 10 ms chunk
KEEP_CHUNKS = 50  # the canceller hands a chunk back within a frame or two of the microphone's


class NearEnd:
    """Hand it each 10 ms of microphone audio with whether that may go out as it is (`offer`); it turns the
    canceller's output into what is heard (`mix`)."""

    def __init__(self) -> None:
        self._offered: collections.deque[tuple[float, np.ndarray, bool]] = collections.deque(maxlen=KEEP_CHUNKS)
        self._share = 0.0  # of the microphone in the last chunk mixed
        self.raw_chunks = 0  # chunks that went out as the microphone itself (diagnostics, tests)

    def offer(self, at: float, mic: np.ndarray, *, as_is: bool) -> None:
        """The chunk of microphone audio at clock time `at`, and whether it may be heard as it is."""
        self._offered.append((at, mic, as_is))

    def mix(self, cleaned: Frame) -> Frame:
        chunks = len(cleaned.samples) // CHUNK
        if chunks * CHUNK != len(cleaned.samples):
            self._share = 0.0  # no canceller at work: its audio is the microphone's already
            return cleaned
        out = cleaned.samples.copy()
        for i in range(chunks):
            span = slice(i * CHUNK, (i + 1) * CHUNK)
            out[span] = self._blend(out[span], self._find(cleaned.at + i * CHUNK / RATE))
        return Frame(out, cleaned.at, cleaned.position)

    def _find(self, at: float) -> tuple[np.ndarray, bool] | None:
        while self._offered and self._offered[0][0] < at - CHUNK / RATE / 2:
            self._offered.popleft()
        if self._offered and abs(self._offered[0][0] - at) < CHUNK / RATE / 2:
            _, mic, as_is = self._offered.popleft()
            return mic, as_is
        return None

    def _blend(self, cleaned: np.ndarray, offered: tuple[np.ndarray, bool] | None) -> np.ndarray:
        if offered is None:  # not held against the echo path (nothing to interrupt, no echo): as cleaned
            self._share = 0.0
            return cleaned
        mic, as_is = offered
        share = 1.0 if as_is else 0.0
        before, self._share = self._share, share
        self.raw_chunks += int(as_is)
        if before == share:
            return mic if as_is else cleaned
        ramp = FADE if as_is else 1.0 - FADE
        return np.asarray(cleaned + ramp * (mic - cleaned), dtype=np.float32)
