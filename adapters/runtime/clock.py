"""The real clock (adapters.contract.clock's protocol on monotonic time): the engine, the devices and the app share
it, so every timestamp of a turn is on one time base."""

from __future__ import annotations

import asyncio
import time


class SystemClock:
    """Monotonic time on the running loop; the time base of the real devices' timestamps."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))
