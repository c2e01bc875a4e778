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
    audio, rate = segment.audio, segment.sample_rate
    window = max(1, round(rate * WINDOW_MS / 1000))
    end = _last_sound_end(audio, window)
    if end is None:
        return segment
    length = min(len(audio), end + round(rate * keep_ms / 1000))
    if length >= len(audio):
        return segment
    kept = audio[:length].astype(np.float32)
    fade = min(length, max(1, round(rate * FADE_MS / 1000)))
    kept[length - fade :] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
    duration_ms = 1000.0 * length / rate
    words = tuple(
        dataclasses.replace(w, start_ms=min(w.start_ms, duration_ms), end_ms=min(w.end_ms, duration_ms))
        for w in segment.words
    )
    return dataclasses.replace(segment, audio=np.round(kept).astype(np.int16), words=words)


def trim_head(segment: SynthSegment, keep_ms: float = KEEP_HEAD_MS) -> SynthSegment:
    """`segment` beginning `keep_ms` before its first sound (faded in), its words moved earlier by the cut."""
    audio, rate = segment.audio, segment.sample_rate
    window = max(1, round(rate * WINDOW_MS / 1000))
    loud = _loud_windows(audio, window, ONSET_DBFS)
    if loud.size == 0:
        return segment
    cut = max(0, int(loud[0]) * window - round(rate * keep_ms / 1000))
    if cut == 0:
        return segment
    kept = audio[cut:].astype(np.float32)
    fade = min(len(kept), max(1, round(rate * FADE_MS / 1000)))
    kept[:fade] *= np.linspace(0.0, 1.0, fade, dtype=np.float32)
    shift_ms = 1000.0 * cut / rate
    words = tuple(
        dataclasses.replace(w, start_ms=max(0.0, w.start_ms - shift_ms), end_ms=max(0.0, w.end_ms - shift_ms))
        for w in segment.words
    )
    return dataclasses.replace(segment, audio=np.round(kept).astype(np.int16), words=words)


def _last_sound_end(audio: np.ndarray, window: int) -> int | None:
    """The end (in samples) of the last window at or above SOUND_DBFS; None when nothing is that loud."""
    loud = _loud_windows(audio, window, SOUND_DBFS)
    return None if loud.size == 0 else int(loud[-1] + 1) * window


def _loud_windows(audio: np.ndarray, window: int, dbfs: float) -> np.ndarray:
    """The indices of the whole `window`-sample windows whose power is at or above `dbfs`."""
    count = len(audio) // window
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    frames = audio[: count * window].astype(np.float32).reshape(count, window) / 32768.0
    power = np.mean(frames * frames, axis=1)
    return np.flatnonzero(power >= 10 ** (dbfs / 10))
