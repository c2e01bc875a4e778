"""A first phrase keeps a breath of Piper's closing silence, not a sentence's worth, and a reply's first audio a
breath of its opening silence (adapters.tts.tail)."""

from __future__ import annotations

import numpy as np

from adapters.contract.speech_io import SynthSegment, WordTiming
from adapters.tts.tail import KEEP_HEAD_MS, KEEP_MS, trim_head, trim_tail

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


def test_the_quiet_before_the_first_sound_is_cut_to_a_breath_and_the_words_move_with_it() -> None:
    words = (WordTiming(0, 3, 45, 200), WordTiming(4, 8, 250, 480))
    segment = _segment(("quiet", 50), ("tone", 180), ("quiet", 50), ("tone", 200), words=words)
    trimmed = trim_head(segment)
    cut_ms = segment.duration_ms - trimmed.duration_ms
    assert abs(cut_ms - (50 - KEEP_HEAD_MS)) <= 10, "the first 10 ms window of sound begins at 50 ms"
    assert np.array_equal(trimmed.audio[-round(RATE * 0.4) :], segment.audio[-round(RATE * 0.4) :])
    assert abs(int(trimmed.audio[0])) <= 1, "faded in: no click"
    assert [w.start_ms for w in trimmed.words] == [45 - cut_ms, 250 - cut_ms]
    assert [w.end_ms for w in trimmed.words] == [200 - cut_ms, 480 - cut_ms]
    assert trimmed.text == segment.text


def test_audio_that_begins_in_sound_or_holds_none_keeps_its_head() -> None:
    starts_loud = _segment(("tone", 300), ("quiet", 20))
    silent = _segment(("quiet", 300))
    assert trim_head(starts_loud) is starts_loud
    assert trim_head(silent) is silent
