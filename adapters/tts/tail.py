"""The silence around a phrase. Piper ends every text as a sentence, with ~150 ms of quiet after its last sound: a
first segment cut before the sentence's next phrase (adapters.tts.chunker) keeps only a breath of it, so the
sentence goes on after a phrase break rather than a sentence break. Piper also opens every text with 30-60 ms of
quiet: a reply's first segment loses it (keeping a breath), since before a reply it is only a wait for the user."""

from __future__ import annotations

import dataclasses

import numpy as np

from adapters.contract.speech_io import SynthSegment

WINDOW_MS = 10.0
SOUND_DBFS = -40.0  # a 10 ms window this loud is still the voice (Piper's speech is -10 to -30 dBFS)
KEEP_MS = 40.0  # of the quiet after the last sound: the phrase break
ONSET_DBFS = -60.0  # the first window this loud is where the voice begins (a breathy "h" included)
KEEP_HEAD_MS = 10.0  # of the quiet before the first sound
FADE_MS = 5.0  # the cut is faded out, never a click


def trim_tail(segment: SynthSegment, keep_ms: float = KEEP_MS) -> SynthSegment:
    """`segment` ending `keep_ms` after its last sound (faded out), its words clamped to the shorter audio."""
    loud, window = _loud_windows(segment, SOUND_DBFS)
    if loud.size == 0:
        return segment
    end = int(loud[-1] + 1) * window + round(segment.sample_rate * keep_ms / 1000)
    return _kept(segment, 0, end) if end < len(segment.audio) else segment


def trim_head(segment: SynthSegment, keep_ms: float = KEEP_HEAD_MS) -> SynthSegment:
    """`segment` beginning `keep_ms` before its first sound (faded in), its words moved earlier by the cut."""
    loud, window = _loud_windows(segment, ONSET_DBFS)
    if loud.size == 0:
        return segment
    start = int(loud[0]) * window - round(segment.sample_rate * keep_ms / 1000)
    return _kept(segment, start, len(segment.audio)) if start > 0 else segment


def _kept(segment: SynthSegment, start: int, end: int) -> SynthSegment:
    """Samples [start, end) of `segment`, faded in or out where cut, its words moved and clamped to them."""
    rate = segment.sample_rate
    kept = segment.audio[start:end].astype(np.float32)
    fade = min(len(kept), max(1, round(rate * FADE_MS / 1000)))
    if start > 0:
        kept[:fade] *= np.linspace(0.0, 1.0, fade, dtype=np.float32)
    if end < len(segment.audio):
        kept[len(kept) - fade :] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    shift_ms, duration_ms = 1000.0 * start / rate, 1000.0 * len(kept) / rate

    def moved(ms: float) -> float:
        return min(max(0.0, ms - shift_ms), duration_ms)

    words = tuple(dataclasses.replace(w, start_ms=moved(w.start_ms), end_ms=moved(w.end_ms)) for w in segment.words)
    return dataclasses.replace(segment, audio=np.round(kept).astype(np.int16), words=words)


def _loud_windows(segment: SynthSegment, dbfs: float) -> tuple[np.ndarray, int]:
    """The indices of the whole WINDOW_MS windows of `segment` whose power is at or above `dbfs`, and the window's
    length in samples."""
    audio = segment.audio
    window = max(1, round(segment.sample_rate * WINDOW_MS / 1000))
    count = len(audio) // window
    if count == 0:
        return np.zeros(0, dtype=np.int64), window
    frames = audio[: count * window].astype(np.float32).reshape(count, window) / 32768.0
    power = np.mean(frames * frames, axis=1)
    return np.flatnonzero(power >= 10 ** (dbfs / 10)), window
