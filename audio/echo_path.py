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
import logging
from dataclasses import dataclass

import numpy as np

from audio.ports import RATE

log = logging.getLogger(__name__)

CHUNK = RATE // 100  # 10 ms
WINDOW = 2 * CHUNK  # spectra over 20 ms, every 10 ms
# 800 Hz bands above 2.4 kHz: in one 4-8 kHz band Parley's own "s" echoed as loud as the user's "S" said under it,
# which went unheard until the vowel (issue 12, stop_ms 130-170); narrower bands tell the two hisses apart
EDGES_HZ = (100, 300, 600, 1200, 2400, 3200, 4000, 4800, 5600, 6400, 7200, 8001)
MAX_DELAY_S = 1.0  # the longest acoustic path + device latencies looked for
DELAY_EVERY = 50  # chunks of playback between delay estimates
DELAY_FIRST = 25  # the first estimate, a quarter second into the first reply
MAX_LAG_CHUNKS = round(MAX_DELAY_S * 100)
NO_ECHO_AFTER = 2  # estimates finding no echo before the path is taken for a headset's (learned from the loudest)
DECIMATE = 4  # the delay is looked for at 4 kHz (a 0.25 ms grid, for a 10 ms one needed)
DELAY_MIN_CORRELATION = 0.35  # below this the microphone holds more than the echo: no estimate
# a known delay moves beyond its SPREAD at once only for an estimate this sure, else for two in a row that agree:
# a voice the VAD had not yet told of, under the echo, draws one weak estimate tens of chunks off, and the echo at
# the old delay then goes unexplained and is taken for the user; a path that really moved in a noisy room is found
# twice
DELAY_MOVE_CORRELATION = 0.7
# a path that moves (an underrun delays it) keeps its loudness: once `remeasure` lets sound the VAD took for a voice
# into the estimates, one that would move a known delay and fits sound this much louder (3 dB) than the echo still
# found at the known delay is that voice, whatever its correlation (the user saying the reply's own word in the
# reply's own voice: 5 -> 35 chunks at 0.74, docs/decisions/0002)
MOVE_LOUDER = 2.0
FIT_BLOCK = 5 * CHUNK // DECIMATE  # 50 ms at 4 kHz
# after an underrun the echo is still there, its delay moving back for seconds as the sound server catches up (a
# loopback, weak estimates 0.24-0.31): it is looked for every REFIND_EVERY chunks of playback, and estimates that
# find none are not taken for a headset's, for REFIND_CHUNKS of playback after the underrun
REFIND_EVERY = 10
REFIND_CHUNKS = 300
# a sound server catching up after an underrun (module-loopback) resamples: the echo's delay drifts back by 6 ms a
# second and jumps 10 ms either way for tenths of a second, so over the estimate's second its waveform no longer
# follows the played one (correlation 0.15-0.35) while its band loudness still does (0.8-0.98). Where the waveform is
# not sure, the echo is looked for this many chunks either side of a known delay by its loudness alone...
FOLLOW_CHUNKS = 10
FOLLOW_SPAN = 50  # ...over the last half second (a second's lags half a second behind a drifting path)...
FOLLOW_CORRELATION = 0.8  # ...and followed where it correlates this well (0.57 once early in a reply: not a move)
LOUDNESS_FLOOR = 1e-9  # band power (-90 dB) below which loudness is silence
SPREAD = 3  # chunks either side of the delay the echo may come from (a drifting loopback, a room's early echoes)
DRIFT_SPREAD = 5  # and for REFIND_CHUNKS after the delay was followed: it is a chunk or two off until followed again
DECAY = 10 ** (-1.5 / 10)  # a room's echo dies away no faster than 1.5 dB per 10 ms
MARGIN = 4.0  # 6 dB: microphone power up to this times the explained echo is echo
NOISE_MARGIN = 4.0
ACTIVE_POWER = 1e-6  # a band of the played signal below this (-60 dB) teaches nothing about the path's gain
LEARN_RATE = 0.05  # nepers per chunk (~0.2 dB): the gains follow the median of what they see
VOICE_POWER = 10 ** (-45 / 10)  # unexplained sound this loud (mean square, -45 dBFS) may be a voice
VAD_LAG_CHUNKS = 10  # the VAD tells of a voice up to 100 ms after its first sound: those chunks were a voice too
VOICE_AFTER_CHUNKS = 30  # sound a known path cannot explain counts as a voice if the VAD tells of one this soon


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


def band_powers(windows: np.ndarray) -> np.ndarray:
    """Mean-square power per band of each row (WINDOW samples) of `windows`."""
    spectrum = np.abs(np.fft.rfft(windows * _HANN, axis=-1)) ** 2
    return np.asarray(spectrum @ _BANDS.T * (_SCALE / WINDOW))


class EchoPath:
    """Feed it each 10 ms of raw microphone audio with the reference audible at the same time (`step`)."""

    def __init__(self) -> None:
        bands = len(_BANDS)
        self.delay_chunks: int | None = None  # acoustic delay, once measured
        self.gains = np.ones(bands)  # per-band echo gain: 1 (as loud as played) until measured
        self.calibrated = False
        # played band powers per chunk: as far back as the loudness is followed (the longest delay and more)
        self._ring = np.zeros((MAX_LAG_CHUNKS + FOLLOW_CHUNKS + FOLLOW_SPAN + 2 * DRIFT_SPREAD, bands))
        self._steps = 0
        self._windows = np.zeros((2, WINDOW))  # the last 20 ms of microphone and played audio
        self._mic_hist: collections.deque[np.ndarray] = collections.deque(maxlen=100)
        self._voiced: collections.deque[bool] = collections.deque(maxlen=100)  # per _mic_hist chunk: somebody talked
        self._strange: collections.deque[bool] = collections.deque(maxlen=100)  # and: a known path did not explain it
        self._released: collections.deque[bool] = collections.deque(maxlen=100)  # and: a voice `remeasure` let in
        self._chunk_at: collections.deque[float] = collections.deque(maxlen=100)  # and its audio time
        self._ref_hist: collections.deque[np.ndarray] = collections.deque(maxlen=100 + MAX_LAG_CHUNKS)
        self._mic_bands: collections.deque[np.ndarray] = collections.deque(maxlen=FOLLOW_SPAN)  # the latest chunks'
        self._held = np.zeros(bands)
        self._noise = np.full(bands, 1e-9)
        self._active_chunks = 0
        self._unfound = 0  # delay estimates in a row that found no echo
        self._unsure: int | None = None  # a weak estimate's delay: taken if the next estimate agrees
        self._due = False  # estimate the delay at the next chunk of playback
        self._learned = 0
        self._moved_at = -np.inf  # audio time from which the path may have moved: no estimate reads before it
        self._refind_until = 0  # chunks of playback until which an echo known before an underrun is looked for
        self._drifts_until = 0  # and until which a delay followed by loudness is looked for as often

    def step(self, mic: np.ndarray, ref: np.ndarray, at: float, *, quiet: bool) -> ChunkEcho:
        """`quiet`: nobody is known to be talking, so what the microphone hears now may teach the path."""
        windows = self._windows
        windows[:, :CHUNK] = windows[:, CHUNK:]
        windows[0, CHUNK:], windows[1, CHUNK:] = mic, ref
        mic_bands, ref_bands = band_powers(windows)
        self._ring[self._steps % len(self._ring)] = ref_bands
        self._steps += 1
        echo = self._explained()
        if quiet:
            self._learn(mic_bands)
        self._noise = np.where(mic_bands < self._noise, mic_bands, self._noise * 1.002 + 1e-12)
        excess = mic_bands - MARGIN * echo - NOISE_MARGIN * self._noise
        unexplained = float(np.sum(np.maximum(excess, 0)))
        self._mic_hist.append(windows[0, CHUNK:].reshape(-1, DECIMATE).mean(axis=1))
        self._mark(at, voiced=not quiet, strange=self.delay_chunks is not None and unexplained > VOICE_POWER)
        self._ref_hist.append(windows[1, CHUNK:].reshape(-1, DECIMATE).mean(axis=1))
        self._mic_bands.append(mic_bands)
        self._track_delay(ref_bands)
        power = float(np.sum(mic_bands))  # over the same 20 ms as the bands
        return ChunkEcho(at, power, float(np.sum(echo)), unexplained)

    def echo_lasts_s(self) -> float | None:
        """How long after the played signal stops its echo may still come by the direct path (None: not
        measured). A room's reverberation outlasts it: `ChunkEcho.explained` tells how loud that can still be."""
        if self.delay_chunks is None:
            return None
        return (self.delay_chunks + self._spread() + 1) * CHUNK / RATE

    def remeasure(self, since: float) -> None:
        """Sound the path did not explain from audio time `since` on was no voice (an onset that came to nothing):
        the path may have moved (an output underrun delays everything after it), so measure the delay again at
        once, on that sound too. A path taken for a headset's may have become a loudspeaker's (issue 37: a loopback
        loaded mid-session was heard as the user, then cut every reply): it is forgotten, and assumed as loud as
        the played signal again until measured."""
        if self.delay_chunks is None and self._unfound >= NO_ECHO_AFTER:
            self.forget()
        start = since - VAD_LAG_CHUNKS * CHUNK / RATE
        before = [at < start for at in self._chunk_at]
        let_in = [voiced and not kept for voiced, kept in zip(self._voiced, before, strict=True)]
        self._released = collections.deque(map(bool.__or__, self._released, let_in), maxlen=self._released.maxlen)
        self._voiced = collections.deque(map(bool.__and__, self._voiced, before), maxlen=self._voiced.maxlen)
        self._strange = collections.deque(map(bool.__and__, self._strange, before), maxlen=self._strange.maxlen)
        self._due = True

    def moved(self, at: float) -> None:
        """The output underran at audio time `at`: the echo of what plays after it may come later than the known
        delay by as much as the sound server fell behind (0.2-0.4 s on a stalled PulseAudio, which then drifts back
        over seconds), so it is explained at any delay, at the gains learned, until measured again on the sound
        after `at` alone (issue 36: a stall's late echo, unexplained at the old delay, barged in on the reply)."""
        if self.delay_chunks is None and self._unfound >= NO_ECHO_AFTER:
            return  # a headset's: no echo for an underrun to move
        if self.delay_chunks is not None:
            log.debug("echo path delay %s chunks unknown again: the output underran at %.3f", self.delay_chunks, at)
            self._refind_until = self._active_chunks + REFIND_CHUNKS
        self.delay_chunks, self._unsure, self._unfound = None, None, 0
        self._moved_at = max(self._moved_at, at)
        self._due = True

    def forget(self) -> None:
        """Start again from the worst case: no delay known, every band as loud as played."""
        self.delay_chunks, self.calibrated = None, False
        self.gains = np.ones(len(_BANDS))
        self._unfound, self._unsure, self._learned = 0, None, 0
        self._due = True
        log.debug("echo path forgotten: assumed as loud as the played signal until measured")

    def _mark(self, at: float, *, voiced: bool, strange: bool) -> None:
        """A voice is no echo: its chunks are left out of the delay estimate (issue 12: a reply begun right after a
        barge-in had its delay taken from the user's question against the cut reply's last words, 0.9 s off, and
        Parley heard its own "Two." as the user)."""
        if voiced and self._voiced and not self._voiced[-1]:
            for back in range(1, min(VAD_LAG_CHUNKS, len(self._voiced)) + 1):
                self._voiced[-back] = True
        self._voiced.append(voiced)
        self._strange.append(strange)
        self._released.append(False)
        self._chunk_at.append(at)

    def _left_out(self) -> np.ndarray:
        """Per chunk of the history: a voice, or sound a known path could not explain with a voice told of soon
        after (or too recent to know). The VAD may tell of a voice later than its lag allows for: on the loopback
        at -10 dB the user's first syllables, unmarked, drew the delay from 2 chunks to 40 (correlation 0.58), and
        Parley took its own "Two." for the user. Such sound with no voice after it goes back in: a path that
        moved is unexplained too, and is measured again by it."""
        voiced = np.array(self._voiced, bool)
        told = np.concatenate([[0], np.cumsum(np.concatenate([voiced, np.ones(VOICE_AFTER_CHUNKS, bool)]))])
        index = np.arange(len(voiced))
        voice_soon = told[index + VOICE_AFTER_CHUNKS + 1] > told[index]
        stale = np.array(self._chunk_at) < self._moved_at  # before an underrun: the path may have moved since
        return np.asarray(voiced | stale | (np.array(self._strange, bool) & voice_soon))

    def _measure(self, left_out: np.ndarray) -> tuple[int, float, bool] | None:
        """(delay in chunks, correlation, whether a move there fits sound far louder than the known delay's echo
        while sound once taken for a voice is heard) of the microphone history against what was played."""
        span = len(self._mic_hist)
        if span - int(np.sum(left_out)) < DELAY_FIRST:
            return None
        heard = np.repeat(~left_out, CHUNK // DECIMATE).astype(float)
        mic = np.concatenate(list(self._mic_hist)) * heard
        ref = np.concatenate(list(self._ref_hist)[-(span + MAX_LAG_CHUNKS) :])
        before = len(mic) + MAX_LAG_CHUNKS * CHUNK // DECIMATE - len(ref)
        ref = np.concatenate([np.zeros(before), ref])  # nothing was played before the stream began
        lag, correlation = best_lag(mic, ref, round(MAX_DELAY_S * RATE / DECIMATE), heard)
        delay = round(lag * DECIMATE / CHUNK)
        doubtful = self._moves(delay) and any(self._released)
        return delay, correlation, doubtful and self._louder(mic, ref, heard, lag)

    def _louder(self, mic: np.ndarray, ref: np.ndarray, heard: np.ndarray, lag: int) -> bool:
        """What follows the played signal at `lag` is far louder than the echo the known delay still explains:
        a voice (a path that moves keeps its loudness)."""
        assert self.delay_chunks is not None
        max_lag, known = len(ref) - len(mic), self.delay_chunks * CHUNK // DECIMATE
        found = fitted_power(mic, ref[max_lag - lag : len(ref) - lag] * heard)
        echo = fitted_power(mic, ref[max_lag - known : len(ref) - known] * heard)
        return echo > 0 and found > MOVE_LOUDER * echo

    def _played(self, ago: int) -> np.ndarray:
        """Band powers of the chunk played `ago` chunks before the latest one (the ring holds enough)."""
        return np.asarray(self._ring[(self._steps - 1 - ago) % len(self._ring)])

    def _explained(self) -> np.ndarray:
        """Per band: the echo the played signal can explain now (the loudest it could be within the spread)."""
        latest = round(MAX_DELAY_S * 100)
        if self.delay_chunks is None:
            ages = range(min(self._steps, latest + 1))
        else:
            spread = self._spread()
            ages = range(max(0, self.delay_chunks - spread), min(self._steps, self.delay_chunks + spread + 1))
        rows = [(self._steps - 1 - age) % len(self._ring) for age in ages]
        now = self.gains * np.max(self._ring[rows], axis=0) if rows else np.zeros(len(_BANDS))
        self._held = np.maximum(now, self._held * DECAY)
        return self._held

    def _learn(self, mic_bands: np.ndarray) -> None:
        """Move the gains toward what the microphone shows. Before the delay is known (or when there is no echo to
        find it by, as with a headset) against the loudest of what could echo now."""
        if self.delay_chunks is not None and self._steps > self.delay_chunks:
            ref = self._played(self.delay_chunks)
        elif self.delay_chunks is None and self._unfound >= NO_ECHO_AFTER:
            ages = range(min(self._steps, round(MAX_DELAY_S * 100) + 1))
            ref = np.max(self._ring[[(self._steps - 1 - age) % len(self._ring) for age in ages]], axis=0)
        else:
            return  # the echo may be there, its delay not yet known: keep assuming the worst
        active = ref > ACTIVE_POWER
        if not np.any(active):
            return
        step = np.sign(np.log((mic_bands[active] + 1e-12) / (self.gains[active] * ref[active])))
        rate = LEARN_RATE * (4.0 if self._learned < 50 else 1.0)  # fast the first half second, then steady
        self.gains[active] *= np.exp(rate * step)
        self._learned += 1
        self.calibrated = self._learned >= 30

    def _moves(self, delay: int) -> bool:
        """An estimate would move a known delay beyond the spread it already covers."""
        return self.delay_chunks is not None and abs(delay - self.delay_chunks) > SPREAD

    def _doubts(self, delay: int, correlation: float) -> bool:
        """A weak estimate that would move a known delay."""
        return self._moves(delay) and DELAY_MIN_CORRELATION <= correlation < DELAY_MOVE_CORRELATION

    def _track_delay(self, ref_bands: np.ndarray) -> None:
        if np.sum(ref_bands) < ACTIVE_POWER:
            return
        self._active_chunks += 1
        often = self._refinding() or self._active_chunks < self._drifts_until
        every = REFIND_EVERY if often else DELAY_EVERY
        self._due = self._due or self._active_chunks % every == 0 or self._active_chunks == DELAY_FIRST
        if not self._due:
            return
        left_out = self._left_out()
        measured = self._measure(left_out)
        if measured is None:
            return  # too little heard without a voice over it: again at the next chunk played
        self._due = False
        delay, correlation, louder = measured
        known = self.delay_chunks
        sure = correlation >= DELAY_MOVE_CORRELATION
        followed = self._followed(known, ~left_out) if known is not None and not sure else None
        if followed is not None:
            self._unsure = None
            if followed != known:
                log.debug("echo path delay %d -> %d chunks (followed by its loudness; the waveform's estimate, %d at "
                          "%.2f, was not sure)", known, followed, delay, correlation)  # fmt: skip
                self.delay_chunks, self._drifts_until = followed, self._active_chunks + REFIND_CHUNKS
            return
        self._estimated(delay, correlation, louder=louder)

    def _estimated(self, delay: int, correlation: float, *, louder: bool) -> None:
        """Take, doubt or leave a delay estimate of the waveform's."""
        unsure, self._unsure = self._unsure, None
        if louder:
            log.debug("echo path delay kept at %s chunks (%d fits sound louder than its echo, a voice; correlation"
                      " %.2f)", self.delay_chunks, delay, correlation)  # fmt: skip
        elif self._doubts(delay, correlation) and unsure != delay:
            log.debug("echo path delay kept at %s chunks (%d unsure, correlation %.2f)",
                      self.delay_chunks, delay, correlation)  # fmt: skip
            self._unsure = delay
        elif correlation >= DELAY_MIN_CORRELATION:
            if delay != self.delay_chunks:
                log.debug("echo path delay %s -> %d chunks (correlation %.2f)", self.delay_chunks, delay, correlation)
            if self.delay_chunks is None and self._unfound >= NO_ECHO_AFTER:
                self.forget()  # an echo where a headset had none: its gains, learned far down, say nothing of it
            self.delay_chunks = delay
            self._unfound = 0
        else:
            log.debug("no echo path delay found (correlation %.2f)", correlation)
            self._unfound += 0 if self._refinding() else 1

    def _followed(self, known: int, heard: np.ndarray) -> int | None:
        """Where near a known delay the microphone's loudness follows the played signal's surely, when the
        waveform's estimate is not sure: a path that drifts and jumps (a sound server catching up) smears that
        estimate to nothing over its second, and its echo then went unexplained (issue 36: Parley barged in on
        itself 6-8 s after a stall). `heard`: per chunk of the history, no voice over it."""
        span = len(self._mic_bands)
        heard = heard[-span:]
        if np.sum(heard) < DELAY_FIRST:
            return None
        mic = np.log(np.array(self._mic_bands)[heard] + LOUDNESS_FLOOR)
        lags = range(max(0, known - FOLLOW_CHUNKS), min(self._steps - span, known + FOLLOW_CHUNKS) + 1)
        scores = {lag: band_correlation(mic, self._played_loudness(lag, span)[heard]) for lag in lags}
        best = max(scores, key=scores.__getitem__, default=None)
        return best if best is not None and scores[best] >= FOLLOW_CORRELATION else None

    def _played_loudness(self, lag: int, span: int) -> np.ndarray:
        """Log band powers of the `span` chunks played `lag` chunks before the latest `span`, oldest first."""
        rows = [(self._steps - 1 - age) % len(self._ring) for age in range(lag + span - 1, lag - 1, -1)]
        return np.asarray(np.log(self._ring[rows] + LOUDNESS_FLOOR))

    def _spread(self) -> int:
        return DRIFT_SPREAD if self._active_chunks < self._drifts_until else SPREAD

    def _refinding(self) -> bool:
        """An echo known before an underrun is not found again yet (`moved`)."""
        return self.delay_chunks is None and self._active_chunks < self._refind_until


def fitted_power(mic: np.ndarray, played: np.ndarray) -> float:
    """The power gain from `played` to `mic` where the one follows the other (50 ms blocks correlated at least
    DELAY_MOVE_CORRELATION): the loudness of what an estimate found, the rest of the microphone aside. 0 where
    nothing follows."""
    size = FIT_BLOCK * (len(mic) // FIT_BLOCK)
    m, p = mic[:size].reshape(-1, FIT_BLOCK), played[:size].reshape(-1, FIT_BLOCK)
    dots, mine, theirs = np.sum(m * p, axis=1), np.sum(m * m, axis=1), np.sum(p * p, axis=1)
    follows = dots > DELAY_MOVE_CORRELATION * np.sqrt(mine * theirs) + 1e-12
    if not np.any(follows):
        return 0.0
    return float((np.sum(dots[follows]) / np.sum(theirs[follows])) ** 2)


def band_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's correlation of two arrays of rows (chunks) of bands, each band about its own mean."""
    a, b = a - a.mean(axis=0), b - b.mean(axis=0)
    return float(np.sum(a * b) / (np.sqrt(np.sum(a * a) * np.sum(b * b)) + 1e-12))


def best_lag(mic: np.ndarray, ref: np.ndarray, max_lag: int, heard: np.ndarray) -> tuple[int, float]:
    """The lag (samples, 0..max_lag) at which `ref` (max_lag samples longer, ending with `mic`) best explains
    `mic`, and the normalised correlation there. `heard` (1 or 0 per sample of `mic`, 0 where `mic` was zeroed):
    `ref` counts only against the samples heard, so a stretch left out neither helps nor dilutes a lag."""
    n = len(mic)
    size = 1 << (len(ref) + n).bit_length()
    dots = np.fft.irfft(np.fft.rfft(ref, size) * np.conj(np.fft.rfft(mic, size)), size)[: max_lag + 1]
    power = np.fft.rfft(ref * ref, size) * np.conj(np.fft.rfft(heard, size))
    windows = np.maximum(np.fft.irfft(power, size)[: max_lag + 1], 0.0)  # ref's energy against what was heard
    norms = np.sqrt(windows * float(np.dot(mic, mic))) + 1e-12
    # a near-silent stretch of `ref` (its energy a rounding error of the transforms) explains nothing
    scores = np.where(windows > 1e-6 * float(np.max(windows, initial=0.0)), dots / norms, 0.0)
    k = int(np.argmax(scores))
    return max_lag - k, float(scores[k])
