"""The tests' virtual clock: the product's skipping clock on virtual time (sleeps end when time is advanced, by
hand or by `autojump` whenever the loop is idle)."""

from __future__ import annotations

from engine.clock import SkippingClock, settle

__all__ = ["VirtualClock", "settle"]


class VirtualClock(SkippingClock):
    """Deterministic time for tests, starting at `start`."""

    def __init__(self, start: float = 1000.0) -> None:
        super().__init__(real=False, start=start)
