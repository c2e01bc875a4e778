"""The playback reference sits where the DAC stamps say: a restarted stream (pause, stop) does not shift it."""

from __future__ import annotations

import numpy as np
import pytest

from audio.ports import RATE
from audio.tap import ReferenceTap

BLOCK = 160  # 10 ms at 16 kHz, so the tap needs no resampling and positions are exact


def _ramp(n: int, start: int) -> np.ndarray:
    return (np.arange(start, start + n) / 1e5).astype(np.float32)


def _play(tap: ReferenceTap, at: float, blocks: int, start: int = 1) -> float:
    """Push `blocks` contiguous blocks from DAC time `at`; returns the DAC time after them."""
    for k in range(blocks):
        tap.push(at + k * BLOCK / RATE, _ramp(BLOCK, start + k * BLOCK))
    return at + blocks * BLOCK / RATE


def test_blocks_after_a_restart_sit_at_their_own_stamps_not_after_the_dropped_ones() -> None:
    tap = ReferenceTap(RATE)
    end = _play(tap, 10.0, 50)  # 0.5 s played, the device holds the last 30 ms
    tap.cut(end - 0.03)  # abort: what was stamped from here on never played
    restart = end - 0.03 + 0.005  # the new stream's first block, 5 ms after the abort
    _play(tap, restart, 10, start=90_001)
    heard = tap.read(10.0, round((restart - 10.0) * RATE) + BLOCK)
    dropped_from = round(0.47 * RATE)
    assert np.array_equal(heard[:dropped_from], _ramp(dropped_from, 1)), "played audio stays in place"
    assert not np.any(heard[dropped_from : dropped_from + 80]), "the dropped 30 ms and the 5 ms gap are silence"
    assert heard[-BLOCK] == pytest.approx(90_001 / 1e5), "the new stream starts at its own stamp"
    assert tap.resyncs == 1


def test_jitter_is_absorbed_and_a_slow_drift_is_followed() -> None:
    tap = ReferenceTap(RATE)
    rng = np.random.default_rng(3)
    for k in range(3000):  # 30 s, the DAC clock 200 ppm slow against the stamps' clock, +-0.5 ms jitter
        tap.push(100.0 + k * BLOCK / RATE * 1.0002 + rng.uniform(-5e-4, 5e-4), _ramp(BLOCK, 1 + k * BLOCK))
        if k % 10 == 0:
            tap.read(0.0, 1)
    assert tap.resyncs == 0, "jitter never re-anchors"
    last_block_at = 100.0 + 2999 * BLOCK / RATE * 1.0002
    out = tap.read(last_block_at, BLOCK)
    first = 1 + 2999 * BLOCK
    found = round(out[0] * 1e5) - first  # how many samples off the stamp the block sits
    assert abs(found) <= 24, "within ~1.5 ms of where the stamps put it, 6 ms of drift later"


def test_reads_outside_what_played_are_silent_and_resampled_input_lines_up() -> None:
    tap = ReferenceTap(22050)
    assert not np.any(tap.read(0.0, 100))
    t = np.arange(22050) / 22050
    tone = np.sin(2 * np.pi * 300 * t).astype(np.float32)
    for k in range(0, 22050, 220):
        tap.push(5.0 + k / 22050, tone[k : k + 220])
    out = tap.read(5.2, 1600)
    expected = np.sin(2 * np.pi * 300 * (0.2 + np.arange(1600) / RATE))
    assert np.max(np.abs(out - expected)) < 0.02, "16 kHz samples at the times they were audible"
    assert not np.any(tap.read(4.0, 1600)), "before anything played: silence"


def test_an_underrun_gap_and_an_overlap_in_a_running_stream_sit_at_their_stamps() -> None:
    tap = ReferenceTap(RATE)
    end = _play(tap, 20.0, 20)
    late = end + 0.03  # an underrun: the device played 30 ms of silence before the next block
    end = _play(tap, late, 10, start=50_001)
    early = end - 0.008  # the next block's stamp 8 ms before the sample clock's: it wins the overlap
    _play(tap, early, 5, start=70_001)
    heard = tap.read(20.0, round((early - 20.0) * RATE) + 5 * BLOCK)
    gap = slice(20 * BLOCK, 20 * BLOCK + 480)
    assert not np.any(heard[gap]), "the underrun is silence"
    assert heard[gap.stop] == pytest.approx(50_001 / 1e5), "the block after it sits at its own stamp"
    assert heard[-5 * BLOCK] == pytest.approx(70_001 / 1e5), "an early block overwrites what it overlaps"
    assert tap.resyncs == 2


def test_gaps_in_a_resampled_stream_keep_one_resampler_and_the_audio_in_place() -> None:
    """A busy machine: an underrun every few blocks. Restarting the resampler at each cost the event loop more
    than real time (issue 12); the stream runs on, and a tone after the last gap is where its stamps say."""
    rate = 22050
    tap = ReferenceTap(rate)
    at = 3.0
    played = 0
    for k in range(300):
        at += 0.012 if k % 3 == 0 and k < 250 else 0.0  # a 12 ms underrun every third block until the end
        times = at + np.arange(220) / rate
        tap.push(at, np.sin(2 * np.pi * 300 * times).astype(np.float32))
        at += 220 / rate
        played += 220
        tap.read(at - 0.1, 160)
    assert tap.resyncs >= 80
    assert tap.streams == 1
    out = tap.read(at - 0.2, 1600).astype(np.float64)
    expected = np.sin(2 * np.pi * 300 * (at - 0.2 + np.arange(1600) / RATE))
    assert np.corrcoef(out, expected)[0, 1] > 0.99, "the audio after the gaps sits at its stamps"
