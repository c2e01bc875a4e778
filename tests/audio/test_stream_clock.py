"""Stream stamps on the monotonic clock: the callback's wait for the GIL must not move them."""

from __future__ import annotations

import numpy as np
import pytest

from audio.stamps import WINDOW, StreamClock


def test_a_late_callback_does_not_move_its_stamp() -> None:
    clock = StreamClock()
    rng = np.random.default_rng(5)
    offset = 1000.0  # monotonic = stream time + offset
    errors = []
    for k in range(500):
        stream_now = 5.0 + k * 0.01
        waited = rng.exponential(0.01) if k % 4 else 0.0  # most callbacks wait for the GIL, some do not
        mapped = clock.monotonic(stream_now + 0.02, stream_now, now=stream_now + offset + waited)
        errors.append(mapped - (stream_now + 0.02 + offset))
    assert max(abs(e) for e in errors[10:]) < 1e-9


def test_a_stepped_stream_clock_is_followed_within_the_window() -> None:
    clock = StreamClock()
    for k in range(WINDOW):
        clock.monotonic(k * 0.01, k * 0.01, now=100.0 + k * 0.01)
    # the stream's (wall) clock steps back 2 s: offsets grow by 2 s and, once the window has passed, are used
    for k in range(WINDOW, 2 * WINDOW + 1):
        mapped = clock.monotonic(k * 0.01 - 2.0, k * 0.01 - 2.0, now=100.0 + k * 0.01)
    assert mapped == pytest.approx(100.0 + 2 * WINDOW * 0.01)
