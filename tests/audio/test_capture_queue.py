"""The hand-over from PortAudio's thread: never blocks, bounded, drops the oldest and counts it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from audio.capture import FrameQueue

pytestmark = pytest.mark.anyio


async def test_a_flood_from_another_thread_keeps_the_newest_and_counts_the_dropped() -> None:
    queue = FrameQueue(asyncio.get_running_loop(), maxlen=100)
    producer = threading.Thread(target=lambda: [queue.put(i) for i in range(150)])
    producer.start()
    await asyncio.to_thread(producer.join)
    assert queue.dropped == 50
    assert [await queue.get() for _ in range(100)] == list(range(50, 150))


async def test_a_waiting_reader_wakes_on_a_put_from_another_thread() -> None:
    queue = FrameQueue(asyncio.get_running_loop(), maxlen=4)
    reader = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    threading.Thread(target=queue.put, args=("frame",)).start()
    assert await asyncio.wait_for(reader, 5) == "frame"
