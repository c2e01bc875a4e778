"""PortAudio's stream times on `time.monotonic()`, undisturbed by a callback's wait for the GIL.

A callback learns the stream's time of its buffer (stamped by PortAudio before the call) and can read
`time.monotonic()` only once Python runs it. Their difference is the two clocks' offset plus however long the
callback waited for the GIL: tens of milliseconds, block after block, while the window paints or a model's Python
code runs. Mapped with that, every block's stamp jitters and the echo reference lands beside the echo (issue 12:
the path's delay not found, the story paused on its own voice). The wait only ever adds, so the smallest
difference over the last second is the offset.
"""

from __future__ import annotations

import collections
import time

WINDOW = 100  # callbacks (1-2 s): long enough to hold one on time, short enough to follow a stepped wall clock


class StreamClock:
    """One per stream, used from its callback only."""

    def __init__(self, window: int = WINDOW) -> None:
        self._offsets: collections.deque[float] = collections.deque(maxlen=window)

    def monotonic(self, stamp: float, stream_now: float, now: float | None = None) -> float:
        """`stamp` (stream time) on the monotonic clock; `stream_now` is the stream's time of this callback."""
        self._offsets.append((time.monotonic() if now is None else now) - stream_now)
        return stamp + min(self._offsets)
