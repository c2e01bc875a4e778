"""The clock every layer is given instead of reading time itself, so tests run on virtual time and `--fast` skips
idle time. One protocol for the engine, the audio layer and the adapters; the clocks themselves live with their
users: the real one in adapters.runtime.clock, the fast-forward one in engine.clock."""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""
        ...

    async def sleep(self, seconds: float) -> None: ...
