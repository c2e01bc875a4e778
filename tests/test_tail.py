"""A first phrase keeps a breath of Piper's closing silence, not a sentence's worth (adapters.tts.tail)."""

from __future__ import annotations

import numpy as np

from adapters.contract.speech_io import SynthSegment, WordTiming
from adapters.tts.tail import KEEP_MS, trim_tail

RATE = 16_000


def _segment(*parts: tuple[str, float], words: tuple[WordTiming, ...] = ()) -> SynthSegment:
    """Audio from ("tone" | "quiet", ms) parts."""
    pieces = []
    for kind, ms in parts:
        n = round(RATE * ms / 1000)
        t = np.arange(n) / RATE
        pieces.append((8000 * np.sin(2 * np.pi * 220 * t)) if kind == "tone" else np.full(n, 3.0))
    return SynthSegment(0, "The time", np.concatenate(pieces).astype(np.int16), RATE, words)


def test_the_quiet_after_the_last_sound_is_cut_to_a_breath_and_faded() -> None:
    words = (WordTiming(0, 3, 20, 200), WordTiming(4, 8, 250, 480))
    segment = _segment(("quiet", 20), ("tone", 180), ("quiet", 50), ("tone", 200), ("quiet", 200), words=words)
    trimmed = trim_tail(segment)
    assert abs(trimmed.duration_ms - (450 + KEEP_MS)) <= 10, "the last 10 ms window of sound ends at 450 ms"
    assert np.array_equal(trimmed.audio[: round(RATE * 0.44)], segment.audio[: round(RATE * 0.44)])
    assert abs(int(trimmed.audio[-1])) <= 1, "faded out: no click"
    assert trimmed.words[0] == words[0]
    assert trimmed.words[1].end_ms <= trimmed.duration_ms, "a word never ends after the audio"
    assert trimmed.text == segment.text
    assert trimmed.sample_rate == RATE


def test_audio_that_ends_in_sound_or_holds_none_is_left_as_it_is() -> None:
    ends_loud = _segment(("quiet", 20), ("tone", 300))
    silent = _segment(("quiet", 300))
    assert trim_tail(ends_loud) is ends_loud
    assert trim_tail(silent) is silent
