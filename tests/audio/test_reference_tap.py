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
