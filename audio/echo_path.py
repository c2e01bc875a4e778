"""The loudspeaker-to-microphone path, tracked across replies: its delay and per-band gain, and from them how
much of each 10 ms of microphone audio the played signal cannot explain (a voice of the user's own).

Unlike the echo canceller, this holds from the first millisecond of a reply: the delay and gains learned while
earlier replies played stay (a room does not change between two replies), and until the first reply has taught
them the path is assumed as loud as the played signal itself. It looks at the raw microphone, so the canceller's
suppressor (which dims the user's first syllables during double talk) cannot hide an onset from it.
"""

from __future__ import annotations

import collections
import itertools
from dataclasses import dataclass

import numpy as np

from audio.ports import RATE

CHUNK = RATE // 100  # 10 ms
WINDOW = 2 * CHUNK  # spectra over 20 ms, every 10 ms
EDGES_HZ = (100, 300, 600, 1200, 2400, 4000, 8001)
MAX_DELAY_S = 0.4  # the longest acoustic path + device latencies looked for
DELAY_EVERY = 25  # chunks of playback between delay estimates
DELAY_MIN_CORRELATION = 0.35  # below this the microphone holds more than the echo: no estimate
SPREAD = 3  # chunks either side of the delay the echo may come from (a drifting loopback, a room's early echoes)
DECAY = 10 ** (-1.5 / 10)  # a room's echo dies away no faster than 1.5 dB per 10 ms
MARGIN = 4.0  # 6 dB: microphone power up to this times the explained echo is echo
NOISE_MARGIN = 4.0
ACTIVE_POWER = 1e-6  # a band of the played signal below this (-60 dB) teaches nothing about the path's gain
LEARN_RATE = 0.05  # nepers per chunk (~0.2 dB): the gains follow the median of what they see


@dataclass(frozen=True)
class ChunkEcho:
    """One 10 ms chunk of the microphone against the echo the played signal explains."""

    at: float  # clock time of the chunk's first sample
    power: float  # microphone mean square
    explained: float  # mean square the played signal explains there (0 with nothing played lately)
    unexplained: float  # mean square of bands louder than their explained echo and noise, beyond both


def _band_matrix() -> np.ndarray:
    freqs = np.fft.rfftfreq(WINDOW, 1 / RATE)
    return np.array([(freqs >= lo) & (freqs < hi) for lo, hi in itertools.pairwise(EDGES_HZ)], float)


_BANDS = _band_matrix()
_HANN = np.hanning(WINDOW + 2)[1:-1]
_SCALE = 2.0 / float(np.sum(_HANN**2))  # with / WINDOW: band powers in mean-square units (Parseval)


def band_powers(window: np.ndarray) -> np.ndarray:
    spectrum = np.abs(np.fft.rfft(window * _HANN)) ** 2
    return np.asarray(_BANDS @ spectrum * (_SCALE / WINDOW))


class EchoPath:
    """Feed it each 10 ms of raw microphone audio with the reference audible at the same time (`step`)."""

    def __init__(self) -> None:
        bands = len(_BANDS)
        self.delay_chunks: int | None = None  # acoustic delay, once measured
        self.gains = np.ones(bands)  # per-band echo gain: 1 (as loud as played) until measured
        self.calibrated = False
        self._ref_powers: collections.deque[np.ndarray] = collections.deque(maxlen=round(MAX_DELAY_S * 100) + 8)
        self._mic_tail = np.zeros(CHUNK)
        self._ref_tail = np.zeros(CHUNK)
        self._mic_hist: collections.deque[np.ndarray] = collections.deque(maxlen=100)
        self._ref_hist: collections.deque[np.ndarray] = collections.deque(maxlen=100 + round(MAX_DELAY_S * 100))
        self._held = np.zeros(bands)
        self._noise = np.full(bands, 1e-9)
        self._active_chunks = 0
        self._learned = 0

    def step(self, mic: np.ndarray, ref: np.ndarray, at: float, *, quiet: bool) -> ChunkEcho:
        """`quiet`: nobody is known to be talking, so what the microphone hears now may teach the path."""
        mic = np.asarray(mic, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        mic_bands = band_powers(np.concatenate([self._mic_tail, mic]))
        ref_bands = band_powers(np.concatenate([self._ref_tail, ref]))
        self._mic_tail, self._ref_tail = mic, ref
        self._ref_powers.append(ref_bands)
        self._mic_hist.append(mic)
        self._ref_hist.append(ref)
        self._track_delay(ref_bands)
        echo = self._explained()
        if quiet:
            self._learn(mic_bands)
        self._noise = np.where(mic_bands < self._noise, mic_bands, self._noise * 1.002 + 1e-12)
        excess = mic_bands - MARGIN * echo - NOISE_MARGIN * self._noise
        return ChunkEcho(at, float(np.mean(mic * mic)), float(np.sum(echo)), float(np.sum(np.maximum(excess, 0))))

    def _explained(self) -> np.ndarray:
        """Per band: the echo the played signal can explain now (the loudest it could be within the spread)."""
        powers = list(self._ref_powers)
        if self.delay_chunks is None:
            recent = powers[-(round(MAX_DELAY_S * 100) + 1) :]
        else:
            end = len(powers) - self.delay_chunks
            recent = powers[max(0, end - 1 - SPREAD) : max(0, end + SPREAD)]
        now = self.gains * np.max(recent, axis=0) if recent else np.zeros(len(_BANDS))
        self._held = np.maximum(now, self._held * DECAY)
        return self._held

    def _learn(self, mic_bands: np.ndarray) -> None:
        if self.delay_chunks is None or len(self._ref_powers) <= self.delay_chunks:
            return
        ref = self._ref_powers[-1 - self.delay_chunks]
        active = ref > ACTIVE_POWER
        if not np.any(active):
            return
        step = np.sign(np.log((mic_bands[active] + 1e-12) / (self.gains[active] * ref[active])))
        rate = LEARN_RATE * (4.0 if self._learned < 50 else 1.0)  # fast the first half second, then steady
        self.gains[active] *= np.exp(rate * step)
        self._learned += 1
        self.calibrated = self._learned >= 30

    def _track_delay(self, ref_bands: np.ndarray) -> None:
        if np.sum(ref_bands) < ACTIVE_POWER:
            return
        self._active_chunks += 1
        if self._active_chunks % DELAY_EVERY or len(self._ref_hist) < self._ref_hist.maxlen:  # type: ignore[operator]
            return
        mic = np.concatenate(list(self._mic_hist))
        ref = np.concatenate(list(self._ref_hist))
        lag, correlation = best_lag(mic, ref, round(MAX_DELAY_S * RATE))
        if correlation >= DELAY_MIN_CORRELATION:
            self.delay_chunks = round(lag / CHUNK)


def best_lag(mic: np.ndarray, ref: np.ndarray, max_lag: int) -> tuple[int, float]:
    """The lag (samples, 0..max_lag) at which `ref` (max_lag samples longer, ending with `mic`) best explains
    `mic`, and the normalised correlation there."""
    n = len(mic)
    size = 1 << (len(ref) + n).bit_length()
    dots = np.fft.irfft(np.fft.rfft(ref, size) * np.conj(np.fft.rfft(mic, size)), size)[: max_lag + 1]
    energy = np.concatenate([[0.0], np.cumsum(ref * ref)])
    windows = energy[np.arange(max_lag + 1) + n] - energy[np.arange(max_lag + 1)]
    norms = np.sqrt(windows * float(np.dot(mic, mic))) + 1e-12
    scores = dots / norms
    k = int(np.argmax(scores))
    return max_lag - k, float(scores[k])
